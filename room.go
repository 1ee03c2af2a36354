package usher

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"
)

// QueueingMethod says how waiting visitors are let in.
type QueueingMethod string

// The queueing methods. The zero value means fifo.
const (
	// FIFO admits live waiters in order of arrival.
	FIFO QueueingMethod = "fifo"
	// Random gives every live waiter the same chance in each draw window.
	Random QueueingMethod = "random"
	// Passthrough admits everyone while still counting them.
	Passthrough QueueingMethod = "passthrough"
	// Reject turns new visitors away with the reject page.
	Reject QueueingMethod = "reject"
)

// Route is one host and path prefix that belongs to a room.
type Route struct {
	// Host matches the request's host, without port, case-insensitively.
	// Empty matches any host.
	Host string
	// Path is a path prefix ending at a segment boundary: "/sale" matches
	// "/sale" and "/sale/x", not "/salex". Empty or "/" matches every path.
	Path string
}

// CookieAttributes are the attributes of the ticket cookie.
type CookieAttributes struct {
	// SameSite is "lax", "strict", "none" or "auto" (empty means lax).
	SameSite string
	// Secure is "auto" (empty: Secure when the request came over TLS or with
	// X-Forwarded-Proto: https from a trusted proxy), "always" or "never".
	Secure string
}

// Settings are a room's limits and behaviour, with Cloudflare's names.
type Settings struct {
	// TotalActiveUsers is the most admitted visitors active at once.
	TotalActiveUsers int
	// NewUsersPerMinute is the most admissions in any 60 s window.
	NewUsersPerMinute int
	// SessionDuration is how long an admitted visitor stays active after
	// their last request (or after admission when renewal is disabled).
	SessionDuration time.Duration
	// DisableSessionRenewal ends a session SessionDuration after admission,
	// whatever the visitor does.
	DisableSessionRenewal bool
	// QueueingMethod is fifo (the zero value), random, passthrough or reject.
	QueueingMethod QueueingMethod
	// QueueAll sends every visitor without a valid admitted ticket to the
	// queue.
	QueueAll bool
	// Suspended turns the room off: requests pass untouched and uncounted.
	Suspended bool
	// QueueingStatusCode is the HTTP status of the waiting page (zero: 200).
	QueueingStatusCode int
	// JSONResponseEnabled answers Accept: application/json with JSON.
	JSONResponseEnabled bool
	// CookieSuffix makes the cookie name __usher_wr_<suffix>.
	CookieSuffix string
	// CookieAttributes are the cookie's SameSite and Secure attributes.
	CookieAttributes CookieAttributes
	// CustomPageHTML is a template that replaces the default waiting page.
	CustomPageHTML string
	// DefaultTemplateLanguage is the page's language when the visitor's
	// Accept-Language names none that usher has (empty: en-US).
	DefaultTemplateLanguage string
	// RefreshInterval is how often a waiting visitor checks in near the
	// front of the line.
	RefreshInterval time.Duration
	// MaxRefreshInterval is the longest a FIFO waiter far from the front
	// is told to wait between check-ins (zero: the default, 2m; never less
	// than RefreshInterval). See docs/admission.md, "Adaptive check-ins".
	MaxRefreshInterval time.Duration
	// ClientLimit caps the new tickets one client may get (zero: off).
	ClientLimit ClientLimit
	// ProofOfWork makes a new visitor solve a challenge before it gets a
	// ticket (zero: off).
	ProofOfWork ProofOfWork
	// Autopilot governs the effective limits by the origin's health (zero:
	// off).
	Autopilot Autopilot
	// Shards spreads the room's line over that many Redis hash slots: a
	// front, which admits and holds the line up to its serving horizon,
	// and Shards-1 back shards holding the waiters behind it (zero or one:
	// the whole room in one slot, the default). FIFO rooms only; the
	// embedded store is one process and ignores it. It does not change at
	// runtime: a restart, once nobody waits. See docs/scaling.md, "A room
	// beyond one shard".
	Shards int
}

// ClientLimit caps how many new tickets (new places in line) one client,
// an address prefix, may get a minute, and how many all the clients of one
// network (a shorter prefix) may get together. The zero value is off.
type ClientLimit struct {
	// NewVisitorsPerMinute is the most new tickets one prefix may get in
	// any minute; zero turns the limit off.
	NewVisitorsPerMinute int
	// IPv4Prefix and IPv6Prefix are the prefix lengths that make one
	// client (zero: 32 and 64).
	IPv4Prefix, IPv6Prefix int
	// NetworkNewVisitorsPerMinute is the most new tickets all the clients
	// of one network may get in any minute (zero:
	// NetworkMultiple × NewVisitorsPerMinute), so that many addresses of
	// one network (a /24, a /48 tunnel) take no more than that.
	NetworkNewVisitorsPerMinute int
	// NetworkIPv4Prefix and NetworkIPv6Prefix are the prefix lengths that
	// make one network (zero: 24 and 48).
	NetworkIPv4Prefix, NetworkIPv6Prefix int
	// OverLimit is what a client over its limit gets: "queue" (the zero
	// value's meaning: a waiting ticket at the back of the line, never
	// admitted at once) or "reject" (429 with Retry-After, no ticket).
	OverLimit string
}

// On reports whether the limit applies.
func (c *ClientLimit) On() bool { return c.NewVisitorsPerMinute > 0 }

// Rejects reports whether a client over the limit is turned away rather
// than queued at the back.
func (c *ClientLimit) Rejects() bool { return c.OverLimit == "reject" }

// Prefix returns the client prefix of addr under the limit's prefix
// lengths (32 and 64 when unset).
func (c *ClientLimit) Prefix(addr netip.Addr) netip.Prefix {
	return ClientPrefix(addr, c.IPv4Prefix, c.IPv6Prefix)
}

// NetworkMultiple is how many clients' tickets a network gets a minute
// when NetworkNewVisitorsPerMinute is not set.
const NetworkMultiple = 4

// NetworkPrefix returns the network prefix of addr under the limit's
// network prefix lengths (24 and 48 when unset).
func (c *ClientLimit) NetworkPrefix(addr netip.Addr) netip.Prefix {
	return ClientPrefix(addr, cmp.Or(c.NetworkIPv4Prefix, 24), cmp.Or(c.NetworkIPv6Prefix, 48))
}

// NetworkPerMinute is the network tier's limit in force: the one set, or
// NetworkMultiple times the client's.
func (c *ClientLimit) NetworkPerMinute() int {
	return cmp.Or(c.NetworkNewVisitorsPerMinute, NetworkMultiple*c.NewVisitorsPerMinute)
}

// ClientPrefix returns addr's prefix of v4 bits (IPv4, IPv4-mapped IPv6
// included) or v6 bits (IPv6), the zone dropped; zero lengths mean 32 and
// 64, and lengths out of range are clamped. The zero Addr gives the zero
// Prefix.
func ClientPrefix(addr netip.Addr, v4, v6 int) netip.Prefix {
	if !addr.IsValid() {
		return netip.Prefix{}
	}
	addr = addr.Unmap().WithZone("")
	bits := min(max(v6, 0), 128)
	if v6 == 0 {
		bits = 64
	}
	if addr.Is4() {
		bits = min(max(v4, 0), 32)
		if v4 == 0 {
			bits = 32
		}
	}
	p, _ := addr.Prefix(bits)
	return p
}

// ProofOfWork is the challenge a new visitor solves before it gets a
// ticket. The zero value is off.
type ProofOfWork struct {
	// Difficulty is the number of leading zero bits the solution's hash
	// needs (about 2^Difficulty hashes); zero turns the challenge off.
	Difficulty int
	// Always challenges every new visitor; otherwise (false) only while
	// the room queues (someone waits, no slot is free, queue_all, or a
	// pre-queue), so that a visitor who would go in at once is not made
	// to wait for a puzzle.
	Always bool
}

// TicketBinding ties a room's tickets to the client that got them, so
// that a copied cookie opens as a new visitor on another client. The zero
// value binds nothing.
type TicketBinding struct {
	// ClientPrefix binds to the client's address prefix (IPv4Prefix and
	// IPv6Prefix bits; zero: 24 and 48, so that a visitor whose address
	// changes within its network keeps its ticket).
	ClientPrefix           bool
	IPv4Prefix, IPv6Prefix int
	// UserAgent binds to the User-Agent header.
	UserAgent bool
}

// On reports whether tickets are bound to anything.
func (b *TicketBinding) On() bool { return b.ClientPrefix || b.UserAgent }

// Room is a set of routes with its limits and behaviour.
type Room struct {
	// ID names the room in the config, the API and the cookie binding.
	ID string
	// Name is shown to visitors.
	Name string
	// Origin is the URL admitted requests are proxied to.
	Origin string
	// Routes are the hosts and path prefixes that belong to the room.
	Routes []Route
	// PathCaseSensitive matches route paths case-sensitively.
	PathCaseSensitive bool
	// Events are the room's scheduled events, which must not overlap.
	Events []Event
	// Rules are the room's bypass rules, in order.
	Rules []Rule
	// TicketBinding ties tickets to their client (zero: unbound).
	TicketBinding TicketBinding
	Settings
}

// Rule is a bypass rule: an expression over the request (see
// internal/rules for the language) whose action is bypass_waiting_room.
// A bypassed request goes to the origin untouched: no ticket, no counting.
type Rule struct {
	// Description names the rule in logs and errors.
	Description string
	// Expression is the condition, in CEL.
	Expression string
	// Action is "bypass_waiting_room", the only action.
	Action string
	// Enabled turns the rule on; a disabled rule is still validated.
	Enabled bool
}

// CookieName is the name of the room's ticket cookie.
func (r *Room) CookieName() string {
	if r.CookieSuffix == "" {
		return "__usher_wr"
	}
	return "__usher_wr_" + r.CookieSuffix
}

// CookiePath is the longest path prefix, at a segment boundary, shared by
// all of the room's route paths; "/" when they share none.
func (r *Room) CookiePath() string {
	var prefix string
	for i, rt := range r.Routes {
		p := rt.Path
		if p == "" {
			p = "/"
		}
		if i == 0 {
			prefix = p
			continue
		}
		prefix = commonPathPrefix(prefix, p)
	}
	if prefix == "" {
		return "/"
	}
	return prefix
}

// CookieDomain is the Domain attribute of the room's cookie: the common
// parent domain of its route hosts when the room has routes on several
// hosts, so that one visitor is one visitor across them. See CookieDomain.
func (r *Room) CookieDomain() string {
	hosts := make([]string, len(r.Routes))
	for i, rt := range r.Routes {
		hosts[i] = rt.Host
	}
	return CookieDomain(hosts)
}

// CookieDomain returns the common parent domain of hosts, or "" (a
// host-only cookie) when there are fewer than two distinct hosts, one is
// empty (any host) or an IP address, or they share no parent of at least
// two labels.
func CookieDomain(hosts []string) string {
	var distinct []string
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if h == "" {
			return ""
		}
		if _, err := netip.ParseAddr(h); err == nil {
			return ""
		}
		if !slices.Contains(distinct, h) {
			distinct = append(distinct, h)
		}
	}
	if len(distinct) < 2 {
		return ""
	}
	common := strings.Split(distinct[0], ".")
	for _, h := range distinct[1:] {
		labels := strings.Split(h, ".")
		n := 0
		for n < len(common) && n < len(labels) && common[len(common)-1-n] == labels[len(labels)-1-n] {
			n++
		}
		common = common[len(common)-n:]
	}
	if len(common) < 2 {
		return ""
	}
	return strings.Join(common, ".")
}

func commonPathPrefix(a, b string) string {
	as := strings.Split(strings.Trim(a, "/"), "/")
	bs := strings.Split(strings.Trim(b, "/"), "/")
	var out []string
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] || as[i] == "" {
			break
		}
		out = append(out, as[i])
	}
	return "/" + strings.Join(out, "/")
}
