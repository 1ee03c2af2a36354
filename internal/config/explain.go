package config

import (
	"cmp"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

// Explain writes, for "usher check", one sentence per room saying in plain
// words what the room does, each followed by one indented sentence per
// event (in order of start) and per bypass rule; then one about requests
// that match no room, and, when set, about the country header, forward
// auth (or its absence when trusted_proxies put a proxy in front) and
// watching the file. It assumes c is valid.
func (c *Config) Explain(w io.Writer) error {
	var b strings.Builder
	for i := range c.Rooms {
		rm := &c.Rooms[i]
		b.WriteString(c.explainRoom(rm))
		b.WriteByte('\n')
		events := slices.Clone(rm.Events)
		slices.SortStableFunc(events, func(a, b usher.Event) int { return a.Start.Compare(b.Start) })
		for j := range events {
			fmt.Fprintf(&b, "  %s\n", c.explainEvent(rm, &events[j]))
		}
		for j := range rm.Rules {
			fmt.Fprintf(&b, "  %s\n", explainRule(j, &rm.Rules[j]))
		}
		for _, w := range hooksOfRoom(c, rm) {
			fmt.Fprintf(&b, "  %s\n", explainWebhook(w))
		}
	}
	switch {
	case c.RejectUnknownHosts() && c.Origin == "":
		b.WriteString("Requests for hosts no route names are refused (421); other requests that match no room are answered 404.\n")
	case c.RejectUnknownHosts():
		why := "unknown_hosts is reject"
		if c.UnknownHosts == "" {
			why = "rooms name hosts, so another Host must not reach their origin"
		}
		fmt.Fprintf(&b, "Requests for hosts no route names are refused (421: %s); other requests that match no room go to %s untouched.\n", why, c.Origin)
	case c.Origin == "":
		b.WriteString("Requests that match no room are answered 404.\n")
	default:
		fmt.Fprintf(&b, "Requests that match no room go to %s untouched.\n", c.Origin)
	}
	if rd := c.Store.Redis; rd != nil {
		kind, mode := "Redis", "closed: while Redis cannot be reached, new visitors wait"
		if rd.Cluster {
			kind = "a Redis Cluster"
		}
		if rd.FailMode == "open" {
			mode = "open: while Redis cannot be reached, new visitors are let in uncounted"
		}
		where := "at " + strings.Join(rd.Addrs, ", ")
		if sen := rd.Sentinel; sen != nil {
			kind = "Redis behind Sentinel"
			where = fmt.Sprintf("(the primary the sentinels at %s name %q, followed to the replica they promote when it fails)",
				strings.Join(sen.Addrs, ", "), sen.MasterName)
		}
		fmt.Fprintf(&b, "State is shared through %s %s, so any number of usher nodes can serve these rooms; fail mode %s.\n",
			kind, where, mode)
		if rd.TLS {
			b.WriteString(explainRedisTLS(rd.TLSOptions))
		}
		if n := rd.WaitReplicas; n > 0 {
			who := "a replica has"
			if n > 1 {
				who = fmt.Sprintf("%d replicas have", n)
			}
			fmt.Fprintf(&b, "Admissions and renewals are confirmed only once %s them (wait_replicas), so a failover cannot lose them; while fewer acknowledge, the fail mode answers.\n", who)
		}
		if cs := rd.Slack(); cs > 0 {
			fmt.Fprintf(&b, "Sessions stay counted %v past their end, covering nodes' clocks up to %v apart (clock_slack); the nodes measure their clocks against Redis's and count longer while they are further apart.\n", cs, cs)
		} else {
			b.WriteString("Sessions are counted to their end exactly: the nodes must share one clock (clock_slack 0s).\n")
		}
	}
	if c.CountryHeader != "" {
		if len(c.TrustedProxies) == 0 {
			fmt.Fprintf(&b, "Rules would read the visitor's country from the %s header, but only from trusted_proxies, and none are listed: rules see no country.\n", c.CountryHeader)
		} else {
			fmt.Fprintf(&b, "Rules read the visitor's country from the %s header when a trusted proxy (trusted_proxies) sends it; from any other peer the header is ignored and rules see no country.\n", c.CountryHeader)
		}
	}
	switch fa := c.ForwardAuth.Listen; {
	case fa != "":
		fmt.Fprintf(&b, "Proxies ask about each request at %s/__usher/auth (forward auth; every peer of that listener is trusted: bind it where only the proxy reaches it); the public listener %s does not answer forward auth.\n", fa, c.Listen)
	case len(c.TrustedProxies) > 0:
		// A proxy stands in front: say that it cannot ask usher, lest an
		// operator on an old recipe (public /__usher/auth) learn it from a 404.
		fmt.Fprintf(&b, "Forward auth is off (no forward_auth.listen): a proxy in trusted_proxies must pass requests through usher, since /__usher/auth answers 404 on the public listener %s; to let it ask about each request instead, set forward_auth.listen to a private address and it answers there, at /__usher/auth.\n", c.Listen)
	}
	if at := c.AdmissionToken; !at.Disabled {
		fmt.Fprintf(&b, "Admitted requests carry a signed admission token in %s for the origin to check (keys at /__usher/jwks.json).\n",
			cmp.Or(at.Header, "X-Usher-Admission"))
	}
	if c.WatchConfig {
		b.WriteString("The config is reloaded when its file changes.\n")
	}
	if ws := c.Warnings(); len(ws) > 0 {
		b.WriteString("\nWarnings:\n")
		for _, w := range ws {
			fmt.Fprintf(&b, "- %s\n", w)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// explainRule returns the sentence that describes the j-th rule of a room.
func explainRule(j int, rl *usher.Rule) string {
	name := rl.Description
	if name == "" {
		name = fmt.Sprintf("rules[%d]", j)
	}
	expr := strings.Join(strings.Fields(rl.Expression), " ")
	if !rl.Enabled {
		return fmt.Sprintf("Requests where %s would bypass the room (%s), but the rule is disabled.", expr, name)
	}
	return fmt.Sprintf("Requests where %s bypass the room (%s).", expr, name)
}

// pageName returns a custom page's path as the operator wrote it: relative
// to the config file's directory when Load made it absolute.
func (c *Config) pageName(p string) string {
	if c.dir == "" || !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(c.dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(rel)
}

// explainRoom returns the sentence that describes a room.
func (c *Config) explainRoom(rm *usher.Room) string {
	topOrigin := c.Origin
	origin := rm.Origin
	if origin == "" {
		origin = topOrigin
	}
	head := fmt.Sprintf("Room %q", rm.ID)
	if rm.Name != "" && rm.Name != rm.ID {
		head += " (" + rm.Name + ")"
	}
	if rm.Suspended {
		return fmt.Sprintf("%s is suspended: requests to %s go to %s untouched and uncounted.", head, routesText(rm.Routes), origin)
	}
	return fmt.Sprintf("%s covers %s and proxies to %s: %s.", head, routesText(rm.Routes), origin, strings.Join(c.settingsClauses(rm), "; "))
}

// settingsClauses describes a room's settings, one clause each.
func (c *Config) settingsClauses(rm *usher.Room) []string {
	s := &rm.Settings
	limits := fmt.Sprintf("%s and %s a minute",
		plural(s.TotalActiveUsers, "active visitor"), plural(s.NewUsersPerMinute, "new visitor"))
	var out []string
	queues := true
	switch s.QueueingMethod {
	case usher.Passthrough:
		out = append(out, "it lets every visitor in at once without queueing, still counting them against "+limits)
		queues = s.QueueAll
	case usher.Reject:
		out = append(out, "it admits up to "+limits+" and turns the rest away with the reject page instead of queueing them")
		queues = s.QueueAll
	default:
		out = append(out, "it admits up to "+limits)
	}
	if s.QueueAll {
		out = append(out, "queue_all is on, so every visitor without a session waits and nobody new is let in")
	}
	if s.DisableSessionRenewal {
		out = append(out, fmt.Sprintf("a session lasts %s from admission, however active the visitor is", formatDuration(s.SessionDuration)))
	} else {
		out = append(out, fmt.Sprintf("a session lasts %s after the visitor's last request", formatDuration(s.SessionDuration)))
	}
	if queues {
		order := "first in, first out"
		if s.QueueingMethod == usher.Random {
			order = "by lottery, every live waiter with the same chance"
		}
		every := "every " + formatDuration(s.RefreshInterval)
		if most := admission.MaxInterval(s); s.QueueingMethod != usher.Random && most > s.RefreshInterval {
			every += fmt.Sprintf(" near the front, at most every %s further back,", formatDuration(most))
		}
		out = append(out, fmt.Sprintf("waiting visitors check in %s and are let in %s", every, order))
		if code := s.QueueingStatusCode; code != 0 && code != 200 {
			out = append(out, fmt.Sprintf("the waiting page answers with status %d", code))
		}
	}
	return append(out, c.extraClauses(rm)...)
}

// extraClauses describes the settings that are usually left alone, when
// they are not at their defaults, and then JSON answers.
func (c *Config) extraClauses(rm *usher.Room) []string {
	s := &rm.Settings
	var out []string
	if rm.PathCaseSensitive {
		out = append(out, "paths match case-sensitively")
	}
	if s.CustomPageHTML != "" {
		out = append(out, "the page template is "+c.pageName(s.CustomPageHTML))
	}
	if l := s.DefaultTemplateLanguage; l != "" && l != "en-US" {
		out = append(out, "pages default to "+l)
	}
	ca := s.CookieAttributes
	if s.CookieSuffix != "" || (ca.SameSite != "" && ca.SameSite != "lax") || (ca.Secure != "" && ca.Secure != "auto") {
		cookie := "its cookie is " + rm.CookieName()
		if ca.SameSite != "" && ca.SameSite != "lax" {
			cookie += ", SameSite " + ca.SameSite
		}
		if ca.Secure != "" && ca.Secure != "auto" {
			cookie += ", Secure " + ca.Secure
		}
		out = append(out, cookie)
	}
	if s.ClientLimit.On() {
		out = append(out, clientLimitClause(&s.ClientLimit))
	}
	if s.ProofOfWork.Difficulty > 0 {
		out = append(out, proofOfWorkClause(&s.ProofOfWork))
	}
	if s.Autopilot.Enabled {
		out = append(out, autopilotClause(s))
	}
	if b := &rm.TicketBinding; b.On() {
		out = append(out, bindingClause(b))
	}
	if s.JSONResponseEnabled {
		return append(out, "JSON answers are on")
	}
	return append(out, "JSON answers are off")
}

// clientLimitClause describes a per-client limit.
func clientLimitClause(c *usher.ClientLimit) string {
	over := "the rest wait at the back of the line, behind everyone who arrives in the next day"
	if c.Rejects() {
		over = "the rest are refused with 429"
	}
	return fmt.Sprintf("one client (an IPv4 /%d or IPv6 /%d) gets at most %s a minute and one network (an IPv4 /%d or IPv6 /%d) at most %d for all its clients, and %s",
		c.IPv4Prefix, c.IPv6Prefix, plural(c.NewVisitorsPerMinute, "new place"),
		cmp.Or(c.NetworkIPv4Prefix, 24), cmp.Or(c.NetworkIPv6Prefix, 48), c.NetworkPerMinute(), over)
}

// proofOfWorkClause describes the proof of work.
func proofOfWorkClause(p *usher.ProofOfWork) string {
	if p.Difficulty == 0 {
		return "no proof of work"
	}
	when := "while the room queues, a new visitor"
	if p.Always {
		when = "every new visitor"
	}
	return fmt.Sprintf("%s solves a proof of work of %d bits (about %s hashes, JavaScript needed) before it gets a ticket",
		when, p.Difficulty, humanCount(1<<p.Difficulty))
}

// bindingClause describes ticket binding.
func bindingClause(b *usher.TicketBinding) string {
	var to []string
	if b.ClientPrefix {
		to = append(to, fmt.Sprintf("the client's network (IPv4 /%d, IPv6 /%d)", b.IPv4Prefix, b.IPv6Prefix))
	}
	if b.UserAgent {
		to = append(to, "its browser (user agent)")
	}
	return "tickets are bound to " + joinAnd(to) + ", so a copied cookie is a new visitor elsewhere"
}

// humanCount writes n roughly: "65 thousand", "4 million".
func humanCount(n int) string {
	switch {
	case n >= 1_000_000_000:
		return fmt.Sprintf("%d billion", n/1_000_000_000)
	case n >= 1_000_000:
		return fmt.Sprintf("%d million", n/1_000_000)
	case n >= 1_000:
		return fmt.Sprintf("%d thousand", n/1_000)
	}
	return fmt.Sprint(n)
}

// routesText describes routes, grouping paths by host in order of first
// appearance: "/ on any host", "/sale and /cart on shop.example.com, and /
// on any host".
func routesText(routes []usher.Route) string {
	var hosts []string
	paths := make(map[string][]string)
	for _, rt := range routes {
		h := strings.ToLower(rt.Host)
		if _, ok := paths[h]; !ok {
			hosts = append(hosts, h)
		}
		p := rt.Path
		if p == "" {
			p = "/"
		}
		paths[h] = append(paths[h], p)
	}
	groups := make([]string, len(hosts))
	for i, h := range hosts {
		on := "any host"
		if h != "" {
			on = h
		}
		groups[i] = joinAnd(paths[h]) + " on " + on
	}
	if len(groups) < 2 {
		return strings.Join(groups, "")
	}
	return strings.Join(groups[:len(groups)-1], ", ") + ", and " + groups[len(groups)-1]
}

// plural writes n and noun, adding "s" unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// explainRedisTLS says how usher verifies Redis over TLS.
func explainRedisTLS(t *RedisTLS) string {
	if t == nil {
		return "Redis is reached over TLS, its certificate verified against the system's roots.\n"
	}
	var b strings.Builder
	b.WriteString("Redis is reached over TLS, its certificate verified against ")
	if t.CAFile != "" {
		fmt.Fprintf(&b, "the authorities in %s", t.CAFile)
	} else {
		b.WriteString("the system's roots")
	}
	if t.ServerName != "" {
		fmt.Fprintf(&b, " for the name %q", t.ServerName)
	}
	if t.CertFile != "" {
		fmt.Fprintf(&b, "; usher shows the client certificate in %s", t.CertFile)
	}
	b.WriteString(".\n")
	return b.String()
}
