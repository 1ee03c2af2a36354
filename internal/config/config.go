package config

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/rules"
)

// Config is usher's configuration. Parse and Load return it with the
// defaults filled in and validated; the zero value is not valid (it has no
// listener), Default is.
type Config struct {
	// Listen is the public listener's address, host:port. Default sets
	// 127.0.0.1:8080; empty is invalid.
	Listen string
	// Origin is the URL that requests matching no room are proxied to, and
	// the origin of every room that names none. Empty: requests matching no
	// room are answered 404.
	Origin string
	// TrustedProxies are the IP addresses and CIDR prefixes of the proxies
	// whose X-Forwarded-* headers are believed. Empty: none are, and the
	// client is the connection's peer. See TrustedProxyPrefixes.
	TrustedProxies []string
	// Admin is the private admin listener. Zero: there is none.
	Admin Admin
	// Store is where counters and keys are kept.
	Store Store
	// Keys is the ticket key ring. Empty: the store generates a ring on
	// first start and keeps it. See KeyRing.
	Keys []Key
	// Rooms are the waiting rooms. Empty: every request is treated as
	// matching no room. Parse and Load return each room's events sorted by
	// start.
	Rooms []usher.Room
	// IPListEntries are the named IP lists (ip_lists in the file) that
	// bypass rules refer to with ip.in_ip_list("name"): each entry an IP
	// address (one address: /32 or /128) or a CIDR prefix. Names are 1 to 64
	// of A-Z, a-z, 0-9, '_' and '-'. Empty: no lists. See IPLists.
	IPListEntries map[string][]string
	// CountryHeader is the request header that carries the visitor's
	// country code for bypass rules, such as CF-IPCountry. It is believed
	// only from trusted_proxies (and forward-auth peers); from any other
	// peer it is ignored. Empty: none, and rules see country as "".
	CountryHeader string
	// WatchConfig reloads the config when its file changes (see
	// Reloadable for what a reload may change). False: the config is read
	// once, at start.
	WatchConfig bool
	// ForwardAuth is the private listener that answers forward auth (see
	// gate.AuthPath) for a proxy in front of the site: the only place
	// forward auth is answered. Zero: none, and usher cannot be used
	// beside a proxy (the public listener answers /__usher/auth 404).
	ForwardAuth ForwardAuth
	// AdmissionToken is the signed token admitted requests carry to the
	// origin (and forward-auth answers to the proxy).
	AdmissionToken AdmissionToken
	// UnknownHosts is what happens to a request whose host no route names:
	// "reject" refuses it (421), "pass" sends it to Origin untouched.
	// Empty: reject when any room's route names a host (another Host would
	// otherwise reach that room's origin without its decision), else pass.
	// See RejectUnknownHosts.
	UnknownHosts string
	// Webhooks are the rooms' webhooks (rooms[].webhooks[] in the file),
	// in the order of the file. Empty: none.
	Webhooks []Webhook

	dir string // the config file's directory, absolute, when Load read it
	// written holds the line of each field path the file (or a runtime
	// override) writes, "rooms[0].total_active_users": a field written
	// as 0 is told from one left out. Nil for a Config built in code.
	written map[string]int
}

// wrote reports whether the file (or a runtime override) writes the field
// at path.
func (c *Config) wrote(path string) bool {
	_, ok := c.written[path]
	return ok
}

// Admin is the private admin listener: API, dashboard and metrics.
type Admin struct {
	// Listen is the admin listener's address, host:port; it must differ
	// from Config.Listen. Empty: no admin listener.
	Listen string
	// Token is the bearer token the admin listener requires. Required, here
	// or in TokenFile, when Listen is set. See BearerToken.
	Token string
	// TokenFile is a file holding the token (surrounding white space is
	// ignored), relative to the config file's directory; a path starting
	// $CREDENTIALS_DIRECTORY/ is in the directory of systemd's credentials
	// (LoadCredential), as that variable names it. Load reads it; Parse
	// does not. Set Token or TokenFile, not both.
	TokenFile string
	// Tokens are more bearer tokens, each with a name (the audit log
	// records which token made a change) and a role: read (GET only) or
	// write. Empty: Token (a write token named "admin") is the only one.
	// See BearerTokens.
	Tokens []AdminToken

	fileToken string // TokenFile's content, read by Load
	tokenRead bool   // whether Load read TokenFile
}

// BearerToken returns Token, or the content of TokenFile when Load read it;
// "" when neither is known.
func (a *Admin) BearerToken() string {
	if a.Token != "" {
		return a.Token
	}
	return a.fileToken
}

// ForwardAuth is the private forward-auth listener.
type ForwardAuth struct {
	// Listen is its address, host:port; it must differ from the others.
	// Every peer of it is trusted for the forwarded headers: bind it to an
	// address only the proxy reaches. Empty: no such listener.
	Listen string
}

// AdmissionToken configures admission tokens: a JWT (EdDSA) that says a
// request comes from a visitor the line admitted, for the origin to check
// with the keys at /__usher/jwks.json. The zero value gives every admitted
// request a token in X-Usher-Admission, valid 5 minutes (never past the
// session), signed with keys derived from the ticket key ring.
type AdmissionToken struct {
	// Disabled sends no tokens (and serves no keys).
	Disabled bool
	// Header carries the token (empty: X-Usher-Admission). A client's own
	// copy of it never reaches the origin.
	Header string
	// TTL is how long a token is valid (zero: 5m), never past the session.
	TTL time.Duration
	// Issuer is the "iss" claim (empty: "usher"): the site's public URL is
	// a good choice.
	Issuer string
}

// Store chooses where room counters and keys are kept.
type Store struct {
	// Embedded keeps state on this machine (the default).
	Embedded Embedded
	// Redis, when set, keeps state in Redis, Valkey or a Redis Cluster
	// shared by every usher node of the rooms; Embedded is then unused.
	Redis *Redis
}

// Redis is the shared store.
type Redis struct {
	// Addrs are host:port addresses: one server, or seed nodes of a
	// cluster. Required, unless Sentinel names the server.
	Addrs []string
	// Sentinel, when set, finds the primary through Redis Sentinel and
	// follows it when the sentinels promote a replica; Addrs and Cluster
	// must then be unset.
	Sentinel *RedisSentinel
	// Username and Password authenticate (empty: none). PasswordFile, read
	// by Load relative to the config file, may hold the password instead.
	Username, Password, PasswordFile string
	// DB is the database number (zero; must be zero on a cluster).
	DB int
	// TLS connects with TLS, verifying the server with the system roots
	// ("tls: true"), or as TLSOptions say ("tls:" and a mapping).
	TLS bool
	// TLSOptions, when written, verify the servers with another authority,
	// show them a client certificate or expect another name.
	TLSOptions *RedisTLS
	// Cluster speaks Redis Cluster.
	Cluster bool
	// KeyPrefix starts every key usher writes (zero: "usher").
	KeyPrefix string
	// FailMode is what happens while Redis cannot be reached: "closed"
	// (the zero value's meaning) keeps new visitors waiting with an honest
	// page; "open" admits them uncounted. Admitted visitors keep their
	// sessions either way.
	FailMode string
	// Timeout bounds each Redis call (zero: 500ms).
	Timeout time.Duration
	// WaitReplicas, when above zero, confirms an admission or a session
	// renewal to a visitor only once that many replicas acknowledge it
	// (Redis WAIT, for at most half of Timeout); when fewer do, the fail
	// mode answers (a renewal not confirmed leaves the session to end as
	// counted). A failover then cannot lose a count, at the cost of a
	// replication round trip on each such call, and of the fail mode while
	// the replicas lag or are down. Zero (the default): asynchronous
	// replication, which a failover may leave a few counts short
	// (docs/scaling.md). Not with a cluster.
	WaitReplicas int
	// ClockSlack is how long a session's count outlives the session: the
	// clock difference tolerated between the nodes (nil: DefaultClockSlack).
	// Whole milliseconds (tickets keep a session's end to the millisecond;
	// counts end on whole seconds, and the session that much before); zero
	// for nodes that share one clock (one host).
	ClockSlack *time.Duration

	filePassword string // PasswordFile's content, read by Load
}

// DefaultClockSlack is Redis.ClockSlack's default: many times the
// difference NTP leaves between servers on one network, and the bound
// CockroachDB assumes by default for the same purpose. Each node measures
// the nodes' difference against Redis and counts longer when it is larger;
// a renewal not answered within the slack less that difference leaves the
// session to end as counted (usher.RenewOp.By). The three-node flash crowd
// lets in 0.97 of the places at it, 0.95 at 1 s (docs/benchmarks.md).
const DefaultClockSlack = 250 * time.Millisecond

// MaxClockSlack is the longest Redis.ClockSlack.
const MaxClockSlack = 10 * time.Second

// Slack returns ClockSlack, or DefaultClockSlack when it is not set.
func (r *Redis) Slack() time.Duration {
	if r.ClockSlack == nil {
		return DefaultClockSlack
	}
	return *r.ClockSlack
}

// Secret returns Password, or PasswordFile's content once Load read it.
func (r *Redis) Secret() string {
	if r.Password != "" {
		return r.Password
	}
	return r.filePassword
}

// Embedded is the single-node store kept in a local file.
type Embedded struct {
	// Path is where the store keeps its state. Default sets ./usher-data;
	// a relative path is relative to usher's working directory (config does
	// not resolve it). Empty is invalid.
	Path string
}

// Key is one key of the ticket key ring, as written in the config.
type Key struct {
	// ID names the key in every ticket it seals: 1 to 16 of A-Z, a-z, 0-9,
	// '_' and '-'; unique in the ring.
	ID string
	// Secret is 32 bytes written as 64 hex digits or in base64 (standard or
	// URL alphabet, padded or not).
	Secret string
	// SecretFile is a file holding the secret, written as for Secret,
	// relative to the config file's directory. Load reads it; Parse does
	// not. Set Secret or SecretFile, not both.
	SecretFile string

	fileSecret string // SecretFile's content, read by Load
	secretRead bool   // whether Load read SecretFile
}

// Default returns the configuration a file without any field describes:
// public listener on 127.0.0.1:8080, embedded store in ./usher-data, no
// admin listener, no rooms.
func Default() *Config {
	return &Config{
		Listen: "127.0.0.1:8080",
		Store:  Store{Embedded: Embedded{Path: "./usher-data"}},
	}
}

// DefaultSettings returns the settings of a room that sets none but its
// limits (which have no default): session 5m with renewal, refresh every
// 20s, fifo, status 200, cookie SameSite lax and Secure auto, pages in
// en-US, the whole room on one Redis shard.
func DefaultSettings() usher.Settings {
	return usher.Settings{
		Shards:                  1,
		SessionDuration:         5 * time.Minute,
		QueueingMethod:          usher.FIFO,
		QueueingStatusCode:      200,
		CookieAttributes:        usher.CookieAttributes{SameSite: "lax", Secure: "auto"},
		DefaultTemplateLanguage: "en-US",
		RefreshInterval:         20 * time.Second,
	}
}

// defaultRoom is what a room's fields are decoded over.
func defaultRoom() usher.Room {
	return usher.Room{
		Routes:   []usher.Route{{Path: "/"}},
		Settings: DefaultSettings(),
	}
}

// applyDefaults fills in the fields that depend on others: a room's name is
// its id and its origin the top-level origin unless set, shards written 0
// is 1, and a rule's empty action is bypass_waiting_room.
func (c *Config) applyDefaults() {
	for i := range c.Rooms {
		r := &c.Rooms[i]
		if r.Name == "" {
			r.Name = r.ID
		}
		if r.Settings.Shards == 0 {
			r.Settings.Shards = 1
		}
		if r.Origin == "" {
			r.Origin = c.Origin
		}
		for j := range r.Rules {
			if r.Rules[j].Action == "" {
				r.Rules[j].Action = rules.ActionBypass
			}
		}
	}
}

// sortEvents orders each room's events by start, once they are known not
// to overlap.
func (c *Config) sortEvents() {
	for i := range c.Rooms {
		slices.SortStableFunc(c.Rooms[i].Events, func(a, b usher.Event) int { return a.Start.Compare(b.Start) })
	}
}

// RejectUnknownHosts reports whether requests for hosts no route names are
// refused: UnknownHosts, or by default whether any route names a host.
func (c *Config) RejectUnknownHosts() bool {
	switch c.UnknownHosts {
	case "reject":
		return true
	case "pass":
		return false
	}
	return c.namesHosts()
}

// namesHosts reports whether any room's route names a host.
func (c *Config) namesHosts() bool {
	for i := range c.Rooms {
		for _, rt := range c.Rooms[i].Routes {
			if rt.Host != "" {
				return true
			}
		}
	}
	return false
}

// TrustedProxyPrefixes returns TrustedProxies parsed, a single address as a
// one-address prefix; an error names the first entry that is neither an
// address nor a CIDR prefix.
func (c *Config) TrustedProxyPrefixes() ([]netip.Prefix, error) {
	var out []netip.Prefix
	for i, s := range c.TrustedProxies {
		p, err := parseProxy(s)
		if err != nil {
			return nil, fmt.Errorf("trusted_proxies[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// IPLists returns IPListEntries parsed, a single address as a one-address
// prefix, for rules.Compile; an entry that does not parse (Validate reports
// it) is left out. Nil when there are no lists.
func (c *Config) IPLists() map[string][]netip.Prefix {
	if len(c.IPListEntries) == 0 {
		return nil
	}
	out := make(map[string][]netip.Prefix, len(c.IPListEntries))
	for name, entries := range c.IPListEntries {
		ps := make([]netip.Prefix, 0, len(entries))
		for _, s := range entries {
			if p, err := parseProxy(s); err == nil {
				ps = append(ps, p)
			}
		}
		out[name] = ps
	}
	return out
}

// parseProxy parses an IP address or a CIDR prefix.
func parseProxy(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, fmt.Errorf("must be an IP address or CIDR prefix, got %q", s)
		}
		if a := p.Addr(); a.Is4In6() {
			// Peers are compared unmapped: ::ffff:10.0.0.0/104 is 10.0.0.0/8.
			if p.Bits() < 96 {
				return netip.Prefix{}, fmt.Errorf("an IPv4-mapped prefix must be /96 or longer, got %q", s)
			}
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("must be an IP address or CIDR prefix, got %q", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// KeyRing returns Keys decoded, in order; nil when none are configured. It
// fails when a secret does not decode or a SecretFile was not read (the
// config came from Parse, not Load).
func (c *Config) KeyRing() ([]usher.Key, error) {
	var ring []usher.Key
	for i, k := range c.Keys {
		s, field := k.Secret, "secret"
		if k.SecretFile != "" {
			if !k.secretRead {
				return nil, fmt.Errorf("keys[%d].secret_file: %q was not read (use Load)", i, k.SecretFile)
			}
			s, field = k.fileSecret, "secret_file"
		}
		b, err := decodeSecret(s)
		if err != nil {
			return nil, fmt.Errorf("keys[%d].%s: %w", i, field, err)
		}
		ring = append(ring, usher.Key{ID: k.ID, Secret: b})
	}
	return ring, nil
}
