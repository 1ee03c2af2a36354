package gate

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/rules"
	"github.com/usherhq/usher/internal/server"
)

// Match is what the gate found about a request before deciding.
type Match struct {
	// Room is the room whose route matched, nil when none did.
	Room *usher.Room
	// Route is the matched route, as configured.
	Route usher.Route
	// Path is the request path as matched: decoded and cleaned, not
	// case-folded.
	Path string
	// Paths are every reading of the path that routing considered, Path
	// first: an encoded slash kept in its segment, path parameters dropped,
	// and, in a room whose paths ignore case, each folded to lower case.
	// Bypass rules must hold for all of them.
	Paths []string
	// UnknownHost reports a request for a host that no route names, while
	// the gate refuses such hosts (Options.RejectUnknownHosts).
	UnknownHost bool
	// Solved reports that the request brought a good proof of work, now
	// spent: its cookie is cleared in the answer.
	Solved bool
	// Held is how long the visit was held before its decision (see
	// hold): zero for most. The answer says so in Server-Timing.
	Held time.Duration
	// Auth reports a forward-auth request: answers that do not let the
	// request through must not be 2xx (the proxy would let it through).
	Auth bool
	// ClientIP, Scheme and Host are the client's, through trusted proxies
	// (server.ClientInfo). Host is as requested, port included.
	ClientIP netip.Addr
	Scheme   string
	Host     string
	// TrustedPeer reports that the request came from a trusted proxy
	// (trusted_proxies; a forward-auth request always does), whose
	// headers about the visitor (the country header) are believed.
	TrustedPeer bool
	// At is the time of the decision.
	At time.Time

	// own reports a path that is usher's own, and ownRest what follows
	// OwnPrefix (readPath): answered by usher, never decided or proxied.
	own     bool
	ownRest string
}

// Evaluate routes r and decides it: the one decision function of the gate,
// shared by the reverse proxy and forward auth. A request that matches no
// room, or a suspended room, gets Outcome Pass without a call to the
// Decider. The error is a usher.Error to answer with server.Error: invalid
// for a path that does not decode, misdirected for a host no route names
// (while the gate refuses those), unavailable (with the cause for the
// log) when the Decider fails.
func (g *Gate) Evaluate(r *http.Request) (Match, usher.Decision, error) {
	m, err := g.route(r)
	if err != nil {
		return m, usher.Decision{}, err
	}
	d, err := g.decide(r, &m)
	return m, d, err
}

// errUnknownHost answers a request for a host that no route names.
var errUnknownHost = usher.Errorf(usher.EMisdirected, "this site is not served at this address")

// route finds the room of r.
func (g *Gate) route(r *http.Request) (Match, error) {
	ip, scheme, host := server.ClientInfo(r, g.trusted)
	m, err := g.routeFor(r, ip, scheme, host)
	m.TrustedPeer = server.TrustedPeer(r, g.trusted)
	return m, err
}

// routeFor finds the room of r for a client at ip, over scheme, asking for
// host (route reads them from r; forward auth from the proxy's headers).
func (g *Gate) routeFor(r *http.Request, ip netip.Addr, scheme, host string) (Match, error) {
	var m Match
	m.ClientIP, m.Scheme, m.Host = ip, scheme, host
	rd, err := readPath(r.URL)
	if err != nil {
		return m, err
	}
	paths := rd.paths
	m.Path, m.Paths, m.own, m.ownRest = paths[0], paths, rd.own, rd.rest
	if i := g.routes.match(m.Host, paths); i >= 0 {
		if g.routes.ambiguous(m.Host, paths, i) {
			return m, errAmbiguous
		}
		m.Room, m.Route = g.routes[i].room, g.routes[i].orig
		if !m.Room.PathCaseSensitive {
			for _, p := range paths {
				m.Paths = appendNew(m.Paths, strings.ToLower(p))
			}
		}
	} else if g.hosts != nil && !g.hosts[normHost(m.Host)] {
		// A host no route names: a request with another Host, with none
		// (HTTP/1.0), or in absolute form for another host would reach
		// the origin of a room on a named host without its decision.
		m.UnknownHost = true
	}
	return m, nil
}

// decide asks the Decider about the visitor of m.Room, and sets m.At.
func (g *Gate) decide(r *http.Request, m *Match) (usher.Decision, error) {
	m.At = g.now()
	if m.UnknownHost {
		return usher.Decision{}, errUnknownHost
	}
	if m.Room == nil || m.Room.Suspended {
		return usher.Decision{Outcome: usher.Pass}, nil
	}
	if set := g.rules[m.Room.ID]; set != nil {
		if ok, rule := set.Bypass(g.facts(r, m)); ok {
			g.log.LogAttrs(r.Context(), slog.LevelDebug, "bypass rule",
				slog.String("request_id", server.RequestIDFrom(r.Context())),
				slog.String("room", m.Room.ID), slog.String("rule", rule))
			return usher.Decision{Outcome: usher.Pass}, nil
		}
	}
	t := g.openTicket(r, m)
	if t != nil && t.State == usher.Waiting {
		at := g.hold(r.Context(), m.Room, t, m.At)
		m.Held, m.At = at.Sub(m.At), at
	}
	start := time.Now()
	proof, sp := g.proof(r, m)
	d, err := g.decider.Decide(r.Context(), m.Room, usher.Visit{Ticket: t, Now: m.At, Client: m.ClientIP, Proof: proof})
	// A solution spent is cleared from the browser, whatever came of it.
	m.Solved = sp != nil && sp.spent
	if err != nil {
		return d, &decideError{op: "decide", room: m.Room.ID, err: err}
	}
	if d.Outcome == usher.Challenge {
		// A new visitor that must solve a proof of work first.
		if err := g.challengeFor(m, &d); err != nil {
			return usher.Decision{}, &decideError{op: "challenge", room: m.Room.ID, err: err}
		}
	}
	if g.observe != nil {
		g.observe(m.Room.ID, d.Outcome, time.Since(start))
	}
	return d, nil
}

// facts are what bypass rules see of r: the client IP through trusted
// proxies, the host without port, the path as matched, and the country
// header only from a trusted proxy: from any other peer it is the
// visitor's own word, and rules see no country.
func (g *Gate) facts(r *http.Request, m *Match) *rules.Request {
	host := m.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	f := &rules.Request{
		IP:         m.ClientIP,
		Host:       strings.ToLower(host),
		Path:       m.Path,
		OtherPaths: m.Paths[1:],
		Query:      r.URL.RawQuery,
		Method:     r.Method,
		UserAgent:  r.UserAgent(),
		Headers:    r.Header,
	}
	if g.countryHeader != "" && m.TrustedPeer {
		f.Country = r.Header.Get(g.countryHeader)
	}
	return f
}

// decideError is a failed Decide: unavailable for the visitor, with the
// cause for the log.
type decideError struct {
	op   string // decide, status
	room string
	err  error
}

func (e *decideError) Error() string { return fmt.Sprintf("%s room %q: %v", e.op, e.room, e.err) }

// Unwrap returns the visitor's error first (what usher.ErrorCode and
// usher.ErrorMessage find), then the cause.
func (e *decideError) Unwrap() []error {
	return []error{usher.Errorf(usher.EUnavailable, "the waiting room is unavailable, retry in a moment"), e.err}
}
