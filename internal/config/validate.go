package config

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/web"
)

// The limits on room settings.
const (
	minSessionDuration = 10 * time.Second
	minRefreshInterval = time.Second
	maxRefreshInterval = 5 * time.Minute
)

// MaxShards is the most Redis shards a room's line may span
// (usher.Settings.Shards).
const MaxShards = 16

// Validate checks c and returns a *ValidationError holding every problem
// found, or nil. It does no I/O: a secret_file or token_file counts as set,
// and its content is checked only if Load read it; a custom_page_html only
// has to be non-empty (Load parses it). Bypass rules are compiled against
// the IP lists, as the gate compiles them. The zero values that
// usher gives a meaning (queueing method, status code, cookie attributes,
// template language, and a room's origin when Origin is set) are valid.
func (c *Config) Validate() error {
	var r report
	c.checkListeners(&r)
	if c.Origin != "" {
		if msg := checkOrigin(c.Origin); msg != "" {
			r.add(0, loc{path: "origin"}, "%s", msg)
		}
	}
	for i, s := range c.TrustedProxies {
		if _, err := parseProxy(s); err != nil {
			r.add(0, loc{path: "trusted_proxies"}.index(i), "%v", err)
		}
	}
	if c.Store.Redis != nil {
		c.Store.Redis.check(&r)
	} else if c.Store.Embedded.Path == "" {
		r.add(0, loc{path: "store.embedded.path"}, "required")
	}
	c.checkKeys(&r)
	c.checkIPLists(&r)
	if t := &c.AdmissionToken; !t.Disabled {
		at := loc{path: "admission_token"}
		if t.Header != "" && !validHeaderName(t.Header) {
			r.add(0, at.field("header"), "must be a header name like X-Usher-Admission, got %q", t.Header)
		}
		if t.TTL != 0 && (t.TTL < 10*time.Second || t.TTL > time.Hour) {
			r.add(0, at.field("ttl"), "must be from 10s to 1h, got %s", formatDuration(t.TTL))
		}
		if strings.IndexFunc(t.Issuer, isControl) >= 0 || len(t.Issuer) > 256 {
			r.add(0, at.field("issuer"), "must be at most 256 characters without control characters")
		}
	}
	switch c.UnknownHosts {
	case "", "reject", "pass":
	default:
		r.add(0, loc{path: "unknown_hosts"}, "must be reject or pass, got %q", c.UnknownHosts)
	}
	if c.CountryHeader != "" && !validHeaderName(c.CountryHeader) {
		r.add(0, loc{path: "country_header"}, "must be a header name like CF-IPCountry (letters, digits and !#$%%&'*+-.^_`|~), got %q", c.CountryHeader)
	}
	if len(c.Rooms) > maxRooms {
		r.add(0, loc{path: "rooms"}, "at most %d rooms, got %d: run several usher configs", maxRooms, len(c.Rooms))
		return r.err()
	}
	lists := c.IPLists()
	ids := make(map[string]int)
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		at := roomLoc(i, rm.ID)
		checkRoom(&r, rm, at, c.Origin != "", c.wrote)
		checkEvents(&r, rm, at)
		checkRules(&r, rm, at, lists)
		if first, dup := ids[rm.ID]; dup && rm.ID != "" {
			r.add(0, at.field("id"), "same as %s", roomRef(first, rm.ID))
		} else {
			ids[rm.ID] = i
		}
	}
	checkSameRoutes(&r, c.Rooms)
	checkCookieScopes(&r, c.Rooms)
	c.checkWebhooks(&r)
	return r.err()
}

// checkListeners checks the public, admin and forward-auth listeners.
func (c *Config) checkListeners(r *report) {
	if fa := c.ForwardAuth.Listen; fa != "" {
		at := loc{path: "forward_auth.listen"}
		switch msg := checkHostPort(fa); {
		case msg != "":
			r.add(0, at, "%s", msg)
		case sameListener(fa, c.Listen):
			r.add(0, at, "must differ from listen (%s), got %s", c.Listen, fa)
		case c.Admin.Listen != "" && sameListener(fa, c.Admin.Listen):
			r.add(0, at, "must differ from admin.listen (%s), got %s", c.Admin.Listen, fa)
		}
	}
	if msg := checkHostPort(c.Listen); msg != "" {
		r.add(0, loc{path: "listen"}, "%s", msg)
	}
	a := &c.Admin
	if a.Listen == "" {
		return
	}
	at := loc{path: "admin"}
	if msg := checkHostPort(a.Listen); msg != "" {
		r.add(0, at.field("listen"), "%s", msg)
	} else if sameListener(a.Listen, c.Listen) {
		r.add(0, at.field("listen"), "must differ from listen (%s), got %s", c.Listen, a.Listen)
	}
	switch {
	case a.Token != "" && a.TokenFile != "":
		r.add(0, at, "set token or token_file, not both")
	case a.Token == "" && a.TokenFile == "" && len(a.Tokens) == 0:
		r.add(0, at.field("token"), "required when admin.listen is set (set token, token_file or tokens)")
	}
	a.checkTokens(r, at)
}

// checkKeys checks the key ring.
func (c *Config) checkKeys(r *report) {
	ids := make(map[string]int)
	for i, k := range c.Keys {
		at := loc{path: "keys"}.index(i)
		if !keyIDPattern.MatchString(k.ID) {
			r.add(0, at.field("id"), "must be 1 to 16 of A-Z, a-z, 0-9, '_' and '-', got %q", k.ID)
		} else if first, dup := ids[k.ID]; dup {
			r.add(0, at.field("id"), "same as keys[%d]", first)
		} else {
			ids[k.ID] = i
		}
		switch {
		case k.Secret != "" && k.SecretFile != "":
			r.add(0, at, "set secret or secret_file, not both")
		case k.Secret == "" && k.SecretFile == "":
			r.add(0, at.field("secret"), "required (set secret or secret_file)")
		case k.Secret != "":
			if _, err := decodeSecret(k.Secret); err != nil {
				r.add(0, at.field("secret"), "%v", err)
			}
		case k.secretRead:
			if _, err := decodeSecret(k.fileSecret); err != nil {
				r.add(0, at.field("secret_file"), "%s: %v", k.SecretFile, err)
			}
		}
	}
}

// The most rooms a config, and routes, events and rules a room, may have:
// several checks compare every pair.
const (
	maxRooms   = 1000
	maxPerRoom = 200
)

// checkText reports a name or description with control characters: each
// is shown on one line of usher check's output and of problems.
func checkText(r *report, at loc, s string) {
	if strings.IndexFunc(s, isControl) >= 0 {
		r.add(0, at, "must not contain line breaks or control characters, got %q", s)
	}
}

// checkRoom checks one room's own fields. hasOrigin reports whether the
// config has a top-level origin for the room to fall back on; wrote
// whether the file writes the field at a path.
func checkRoom(r *report, rm *usher.Room, at loc, hasOrigin bool, wrote func(path string) bool) {
	checkText(r, at.field("name"), rm.Name)
	for name, n := range map[string]int{"routes": len(rm.Routes), "events": len(rm.Events), "rules": len(rm.Rules)} {
		if n > maxPerRoom {
			r.add(0, at.field(name), "at most %d, got %d", maxPerRoom, n)
		}
	}
	switch {
	case rm.ID == "":
		r.add(0, at.field("id"), "required")
	case !roomIDPattern.MatchString(rm.ID):
		r.add(0, at.field("id"), "must be 1 to 63 of a-z, 0-9, '_' and '-', starting with a letter or digit, got %q", rm.ID)
	}
	switch {
	case rm.Origin == "" && !hasOrigin:
		r.add(0, at.field("origin"), "required (the config has no top-level origin to fall back on)")
	case rm.Origin != "":
		if msg := checkOrigin(rm.Origin); msg != "" {
			r.add(0, at.field("origin"), "%s", msg)
		}
	}
	if len(rm.Routes) == 0 {
		r.add(0, at.field("routes"), "must list at least one route (leave routes out for every path on any host)")
	}
	hostsOK := true
	for i, rt := range rm.Routes {
		rat := at.field("routes").index(i)
		if msg := checkRoutePath(rt.Path); msg != "" {
			r.add(0, rat.field("path"), "%s", msg)
		}
		if rt.Host == "" {
			continue
		}
		if msg := checkHost(rt.Host); msg != "" {
			hostsOK = false
			r.add(0, rat.field("host"), "%s", msg)
		}
	}
	if hostsOK {
		checkCookieDomain(r, rm, at)
	}
	checkBinding(r, &rm.TicketBinding, at.field("ticket_binding"))
	checkSettings(r, &rm.Settings, at, wrote)
}

// checkSettings checks a room's settings. A limit left out is "required";
// one written as 0 is out of its range like any other number (wrote says
// whether the file writes the field at a path).
func checkSettings(r *report, s *usher.Settings, at loc, wrote func(path string) bool) {
	atLeast := func(name string, v, min int) {
		if v == 0 && !wrote(at.field(name).path) {
			r.add(0, at.field(name), "required, at least %d", min)
			return
		}
		check(r, at.field(name), checkAtLeast(v, min))
	}
	atLeast("total_active_users", s.TotalActiveUsers, 1)
	atLeast("new_users_per_minute", s.NewUsersPerMinute, 1)
	check(r, at.field("session_duration"), checkSessionDuration(s.SessionDuration))
	check(r, at.field("refresh_interval"), checkRefreshInterval(s.RefreshInterval))
	check(r, at.field("max_refresh_interval"), checkMaxRefreshInterval(s.MaxRefreshInterval, s.RefreshInterval))
	check(r, at.field("queueing_method"), checkQueueingMethod(s.QueueingMethod))
	check(r, at.field("shards"), checkShards(s))
	check(r, at.field("queueing_status_code"), checkStatusCode(s.QueueingStatusCode))
	if s.CookieSuffix != "" && !cookieSuffixPattern.MatchString(s.CookieSuffix) {
		r.add(0, at.field("cookie_suffix"), "must be 1 to 32 of A-Z, a-z, 0-9 and '_', got %q", s.CookieSuffix)
	}
	checkCookieAttributes(r, s.CookieAttributes, at.field("cookie_attributes"))
	check(r, at.field("default_template_language"), checkLanguage(s.DefaultTemplateLanguage))
	checkClientLimit(r, &s.ClientLimit, at.field("client_limit"))
	checkProofOfWork(r, &s.ProofOfWork, at.field("proof_of_work"))
	checkAutopilot(r, &s.Autopilot, s, at.field("autopilot"))
}

// checkClientLimit checks a client_limit block (the zero value: none).
func checkClientLimit(r *report, c *usher.ClientLimit, at loc) {
	if *c == (usher.ClientLimit{}) {
		return
	}
	switch {
	case c.NewVisitorsPerMinute == -1:
		r.add(0, at.field("new_visitors_per_minute"), "required: the new tickets one client may get a minute (leave client_limit out for no limit)")
	case c.NewVisitorsPerMinute < 1 || c.NewVisitorsPerMinute > 60000:
		r.add(0, at.field("new_visitors_per_minute"), "must be from 1 to 60000, got %d (leave client_limit out for no limit)", c.NewVisitorsPerMinute)
	}
	if c.IPv4Prefix < 1 || c.IPv4Prefix > 32 {
		r.add(0, at.field("ipv4_prefix"), "must be from 1 to 32, got %d", c.IPv4Prefix)
	}
	if c.IPv6Prefix < 1 || c.IPv6Prefix > 128 {
		r.add(0, at.field("ipv6_prefix"), "must be from 1 to 128, got %d", c.IPv6Prefix)
	}
	checkNetworkLimit(r, c, at)
	switch c.OverLimit {
	case "queue", "reject":
	default:
		r.add(0, at.field("over_limit"), "must be queue or reject, got %q", c.OverLimit)
	}
}

// checkNetworkLimit checks the network tier of a client_limit block: a
// network is no smaller than a client, and gets at least one client's
// limit.
func checkNetworkLimit(r *report, c *usher.ClientLimit, at loc) {
	if n := c.NetworkNewVisitorsPerMinute; n != 0 && (n < max(c.NewVisitorsPerMinute, 1) || n > 60000) {
		r.add(0, at.field("network_new_visitors_per_minute"), "must be from new_visitors_per_minute (%d) to 60000, got %d (leave it out for %d times new_visitors_per_minute)",
			c.NewVisitorsPerMinute, n, usher.NetworkMultiple)
	}
	if p := c.NetworkIPv4Prefix; p < 1 || p > 32 {
		r.add(0, at.field("network_ipv4_prefix"), "must be from 1 to 32, got %d", p)
	} else if p > c.IPv4Prefix && c.IPv4Prefix >= 1 {
		r.add(0, at.field("network_ipv4_prefix"), "must be no longer than ipv4_prefix (%d): a network holds clients, got %d", c.IPv4Prefix, p)
	}
	if p := c.NetworkIPv6Prefix; p < 1 || p > 128 {
		r.add(0, at.field("network_ipv6_prefix"), "must be from 1 to 128, got %d", p)
	} else if p > c.IPv6Prefix && c.IPv6Prefix >= 1 {
		r.add(0, at.field("network_ipv6_prefix"), "must be no longer than ipv6_prefix (%d): a network holds clients, got %d", c.IPv6Prefix, p)
	}
}

// checkProofOfWork checks a proof_of_work block (the zero value: none).
func checkProofOfWork(r *report, p *usher.ProofOfWork, at loc) {
	switch {
	case p.Difficulty == 0:
	case p.Difficulty == -1:
		r.add(0, at.field("difficulty"), "required: the leading zero bits of the solution, like 16 (leave proof_of_work out for none)")
	case p.Difficulty < 1 || p.Difficulty > 32:
		r.add(0, at.field("difficulty"), "must be from 1 to 32 bits, got %d (about 2^difficulty hashes; leave proof_of_work out for none)", p.Difficulty)
	}
}

// checkBinding checks a room's ticket_binding block.
func checkBinding(r *report, b *usher.TicketBinding, at loc) {
	switch {
	case *b == (usher.TicketBinding{}):
		return
	case b.IPv4Prefix == -1:
		r.add(0, at, "binds nothing: set client_prefix or user_agent to true (or leave ticket_binding out)")
		return
	}
	if b.IPv4Prefix < 1 || b.IPv4Prefix > 32 {
		r.add(0, at.field("ipv4_prefix"), "must be from 1 to 32, got %d", b.IPv4Prefix)
	}
	if b.IPv6Prefix < 1 || b.IPv6Prefix > 128 {
		r.add(0, at.field("ipv6_prefix"), "must be from 1 to 128, got %d", b.IPv6Prefix)
	}
}

// check adds a problem at at when msg is not "".
func check(r *report, at loc, msg string) {
	if msg != "" {
		r.add(0, at, "%s", msg)
	}
}

// The checks of single settings, shared by rooms and event overrides: each
// returns why the value is not valid, or "".

func checkAtLeast(v, min int) string {
	if v < min {
		return fmt.Sprintf("must be at least %d, got %d", min, v)
	}
	return ""
}

func checkSessionDuration(d time.Duration) string {
	if d < minSessionDuration {
		return fmt.Sprintf("must be at least %s, got %s", formatDuration(minSessionDuration), formatDuration(d))
	}
	return ""
}

func checkRefreshInterval(d time.Duration) string {
	if d < minRefreshInterval || d > maxRefreshInterval {
		return fmt.Sprintf("must be from %s to %s, got %s", formatDuration(minRefreshInterval), formatDuration(maxRefreshInterval), formatDuration(d))
	}
	return ""
}

// checkMaxRefreshInterval checks max_refresh_interval (zero: unset, the
// default) against refresh_interval.
func checkMaxRefreshInterval(d, refresh time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d < minRefreshInterval || d > maxRefreshInterval:
		return fmt.Sprintf("must be from %s to %s, got %s", formatDuration(minRefreshInterval), formatDuration(maxRefreshInterval), formatDuration(d))
	case d < refresh:
		return fmt.Sprintf("must be at least refresh_interval (%s), got %s", formatDuration(refresh), formatDuration(d))
	}
	return ""
}

func checkQueueingMethod(m usher.QueueingMethod) string {
	switch m {
	case "", usher.FIFO, usher.Random, usher.Passthrough, usher.Reject:
		return ""
	}
	return fmt.Sprintf("must be fifo, random, passthrough or reject, got %q", m)
}

// checkShards checks shards: 1 to MaxShards (0 is 1), and a room spread
// over several only if it keeps its line in order.
func checkShards(s *usher.Settings) string {
	switch {
	case s.Shards < 0 || s.Shards > MaxShards:
		return fmt.Sprintf("must be from 1 to %d, got %d", MaxShards, s.Shards)
	case s.Shards > 1 && s.QueueingMethod == usher.Random:
		return fmt.Sprintf("a random room draws from its whole line; spreading it over shards needs fifo, got %d shards with queueing_method random (set shards to 1)", s.Shards)
	}
	return ""
}

func checkStatusCode(code int) string {
	switch code {
	case 0, 200, 202, 429, 503:
		return ""
	}
	return fmt.Sprintf("must be 200, 202, 429 or 503, got %d", code)
}

// checkLanguage checks default_template_language: empty (en-US) or a
// language usher has pages in, matched as web.SupportedLanguage does.
func checkLanguage(l string) string {
	switch {
	case l == "":
		return ""
	case !languagePattern.MatchString(l):
		return fmt.Sprintf("must be a language tag like \"en-US\", \"fr\" or \"de\", got %q", l)
	}
	if _, ok := web.SupportedLanguage(l); !ok {
		return fmt.Sprintf("usher has no pages in %q; supported: %s", l, strings.Join(web.Languages(), ", "))
	}
	return ""
}

// checkCookieAttributes checks SameSite and Secure and their combination.
func checkCookieAttributes(r *report, ca usher.CookieAttributes, at loc) {
	sameSiteOK, secureOK := true, true
	switch ca.SameSite {
	case "", "auto", "lax", "strict", "none":
	default:
		sameSiteOK = false
		r.add(0, at.field("samesite"), "must be auto, lax, strict or none, got %q", ca.SameSite)
	}
	switch ca.Secure {
	case "", "auto", "always", "never":
	default:
		secureOK = false
		r.add(0, at.field("secure"), "must be auto, always or never, got %q", ca.Secure)
	}
	if sameSiteOK && secureOK && ca.SameSite == "none" && ca.Secure != "always" {
		why := ""
		if ca.Secure != "never" {
			why = ", and auto sets cookies without Secure over plain HTTP"
		}
		r.add(0, at, "samesite none needs secure always, got secure %s: browsers reject SameSite=None cookies that are not Secure%s (set secure to always)", cmp.Or(ca.Secure, "auto"), why)
	}
}

// formatDuration writes d without zero trailing units: "5m", "1h", "1m30s".
func formatDuration(d time.Duration) string {
	s := d.String()
	if len(s) > 3 && s[len(s)-3:] == "m0s" {
		s = s[:len(s)-2]
	}
	if len(s) > 3 && s[len(s)-3:] == "h0m" {
		s = s[:len(s)-2]
	}
	return s
}
