// Package gate is usher's front door. For every public request it finds the
// room (host and path prefix, matched on the path as the origin will read
// it), opens the visitor's ticket cookie, asks the admission engine for a
// decision (Evaluate), and renders that decision: a reverse proxy to the
// origin for admitted visitors, the waiting page or its JSON for waiters,
// the reject page for a closed room. usher's own paths live under
// /__usher/ and are never proxied.
//
// Evaluate is the one decision function; the reverse-proxy handler (Gate's
// ServeHTTP) and a forward-auth handler only translate its result.
package gate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/rules"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/web"
)

// Decider is the admission engine.
type Decider interface {
	// Decide returns the decision for a visit to room.
	Decide(ctx context.Context, room *usher.Room, v usher.Visit) (usher.Decision, error)
	// Status returns the room's live counters.
	Status(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)
}

// Sealer is the ticket cookie codec (internal/ticket.Ring).
type Sealer interface {
	// Seal returns the cookie value of t, bound to room and cookieName.
	Seal(t *usher.Ticket, room, cookieName string) (string, error)
	// Open returns the ticket sealed in value; an error when value is not a
	// ticket of room and cookieName sealed with a known key.
	Open(value, room, cookieName string) (usher.Ticket, error)
	// Binding returns the keyed binding of a client's binding data under
	// the sealing key (never 0).
	Binding(data []byte) uint64
	// Bound reports whether b is data's binding under any key the
	// sealer still opens tickets with.
	Bound(b uint64, data []byte) bool
}

// Options configure a Gate.
type Options struct {
	// Rooms are the rooms the gate guards. Room IDs must be unique and no
	// two routes may have the same host and path. The gate keeps the
	// pointers and never changes the rooms; to change them, build a new
	// Gate.
	Rooms []*usher.Room
	// DefaultOrigin is where requests that match no room are proxied, and
	// the origin of rooms that have none. Empty: such requests get 404.
	DefaultOrigin string
	// Decider decides admissions. Required.
	Decider Decider
	// Sealer seals and opens ticket cookies. Required.
	Sealer Sealer
	// Trusted are the proxies whose X-Forwarded-For, -Proto and -Host are
	// believed (server.ClientInfo). Nil trusts nobody.
	Trusted []netip.Prefix
	// Now returns the time of decisions (nil: time.Now).
	Now func() time.Time
	// Logger receives the gate's logs (nil: slog.Default()).
	Logger *slog.Logger
	// Observe, when not nil, is called after each successful Decide with
	// the room id, the outcome and how long Decide took. Suspended rooms,
	// unmatched requests and failed decisions are not observed.
	Observe func(room string, o usher.Outcome, d time.Duration)
	// Transport carries proxied requests (nil: a clone of
	// http.DefaultTransport keeping up to 100 idle connections per origin,
	// and usher's own lean client for GET and HEAD requests without a body
	// to plain http origins not behind an HTTP proxy from the environment;
	// see originClient).
	Transport http.RoundTripper
	// Pages renders the waiting and reject pages (nil: web.Default()).
	Pages *web.Pages
	// IPLists are the named IP lists bypass rules may use.
	IPLists map[string][]netip.Prefix
	// CountryHeader is the request header carrying the visitor's country
	// for bypass rules ("" : none). It is believed only from a peer in
	// Trusted; from any other, rules see no country.
	CountryHeader string
	// PoW issues and verifies proof-of-work challenges for rooms that ask
	// for them (nil: no room is challenged).
	PoW *guard.PoW
	// Spent spends proof-of-work solutions, once each; required with PoW
	// (the store: shared by every node).
	Spent guard.Spent
	// Tokens signs admission tokens for admitted requests and serves the
	// JWKS and verify endpoints (nil: no tokens).
	Tokens *Tokens
	// Notes signs the pages forward-auth answers point nginx at (nil:
	// forward auth's nginx mode is not available).
	Notes *guard.Notes
	// Invites opens invite links (nil: invite links are refused).
	Invites *guard.Invites
	// InviteUses counts invite uses; required with Invites (the store).
	InviteUses InviteUses
	// Health returns the recorder of a room's origin answers for its
	// autopilot, or nil when its autopilot does not watch responses (nil:
	// none does).
	Health func(room string) *autopilot.Recorder
	// RejectUnknownHosts refuses (421) a request whose host no route
	// names instead of passing it to DefaultOrigin: with rooms on named
	// hosts, another Host (or none, or an absolute URI for another host)
	// would otherwise reach their origin without their decision.
	RejectUnknownHosts bool
}

// Gate is the reverse-proxy handler in front of the origins. It is safe for
// concurrent use.
type Gate struct {
	rooms         map[string]*usher.Room
	routes        table
	origins       map[*usher.Room]*url.URL
	defaultOrigin *url.URL
	decider       Decider
	sealer        Sealer
	trusted       []netip.Prefix
	now           func() time.Time
	log           *slog.Logger
	observe       func(string, usher.Outcome, time.Duration)
	pages         *web.Pages
	proxy         *httputil.ReverseProxy // upgrade requests (pass: the others)
	transport     http.RoundTripper
	lean          *originClient // GET and HEAD without a body (nil: transport only)
	buffers       httputil.BufferPool
	rules         map[string]*rules.Set    // room id -> compiled bypass rules
	custom        map[string]*web.Template // custom page path -> template
	countryHeader string
	hosts         map[string]bool // the route hosts, when unknown hosts are refused
	status        statusCache
	draws         drawsCache
	pow           *guard.PoW
	spent         guard.Spent
	invites       *guard.Invites
	inviteUses    InviteUses
	tokens        *Tokens
	notes         *guard.Notes
	health        map[*usher.Room]*autopilot.Recorder
	held          held // visits held (see hold)
}

// New returns a Gate for opts, or an error naming the first problem found
// (a missing Decider or Sealer, a duplicate room or route, a bad origin).
func New(opts Options) (*Gate, error) {
	if opts.Decider == nil {
		return nil, errors.New("gate: no decider")
	}
	if opts.Sealer == nil {
		return nil, errors.New("gate: no sealer")
	}
	g := &Gate{
		rooms:   make(map[string]*usher.Room, len(opts.Rooms)),
		origins: make(map[*usher.Room]*url.URL, len(opts.Rooms)),
		decider: opts.Decider,
		sealer:  opts.Sealer,
		trusted: opts.Trusted,
		now:     opts.Now,
		log:     opts.Logger,
		observe: opts.Observe,
		pages:   opts.Pages,
		rules:   map[string]*rules.Set{},
		custom:  map[string]*web.Template{},

		countryHeader: opts.CountryHeader,
		pow:           opts.PoW,
		spent:         opts.Spent,
		invites:       opts.Invites,
		inviteUses:    opts.InviteUses,
		tokens:        opts.Tokens,
		notes:         opts.Notes,
	}
	if g.invites != nil && g.inviteUses == nil {
		return nil, errors.New("gate: invites without a use counter")
	}
	if g.tokens != nil {
		if g.tokens.Signer == nil {
			return nil, errors.New("gate: tokens without a signer")
		}
		g.tokens.init(g.now)
	}
	if g.pow != nil && g.spent == nil {
		return nil, errors.New("gate: proof of work without a Spent set")
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.Default()
	}
	if g.pages == nil {
		g.pages = web.Default()
	}
	var err error
	if opts.DefaultOrigin != "" {
		if g.defaultOrigin, err = parseOrigin(opts.DefaultOrigin); err != nil {
			return nil, fmt.Errorf("gate: default origin: %w", err)
		}
	}
	for _, room := range opts.Rooms {
		if room == nil || room.ID == "" {
			return nil, errors.New("gate: a room has no id")
		}
		if _, dup := g.rooms[room.ID]; dup {
			return nil, fmt.Errorf("gate: room %q is defined twice", room.ID)
		}
		g.rooms[room.ID] = room
		if err := g.loadRoom(room, opts.IPLists); err != nil {
			return nil, fmt.Errorf("gate: room %q: %w", room.ID, err)
		}
		if opts.Health != nil {
			if rec := opts.Health(room.ID); rec != nil {
				if g.health == nil {
					g.health = map[*usher.Room]*autopilot.Recorder{}
				}
				g.health[room] = rec
			}
		}
		g.origins[room] = g.defaultOrigin
		if room.Origin != "" {
			if g.origins[room], err = parseOrigin(room.Origin); err != nil {
				return nil, fmt.Errorf("gate: room %q: origin: %w", room.ID, err)
			}
		}
	}
	if g.routes, err = newTable(opts.Rooms); err != nil {
		return nil, fmt.Errorf("gate: %w", err)
	}
	if opts.RejectUnknownHosts {
		g.hosts = map[string]bool{}
		for _, rt := range g.routes {
			if rt.host != "" {
				g.hosts[rt.host] = true
			}
		}
	}
	transport := opts.Transport
	if transport == nil {
		t := NewTransport()
		transport = t
		if !viaProxy(t, g.defaultOrigin, g.origins) {
			g.lean = newOriginClient(t.MaxIdleConnsPerHost, t.IdleConnTimeout)
		}
	}
	g.transport, g.buffers = transport, NewBufferPool()
	g.proxy = &httputil.ReverseProxy{
		Rewrite:        g.rewrite,
		ModifyResponse: g.modifyResponse,
		Transport:      transport,
		BufferPool:     g.buffers,
		ErrorHandler:   g.proxyError,
		ErrorLog:       slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	return g, nil
}

// loadRoom compiles the room's bypass rules and loads its custom pages (the
// room's and its events').
func (g *Gate) loadRoom(room *usher.Room, lists map[string][]netip.Prefix) error {
	if len(room.Rules) > 0 {
		rs := make([]rules.Rule, len(room.Rules))
		for i, r := range room.Rules {
			rs[i] = rules.Rule{Description: r.Description, Expression: r.Expression, Action: r.Action, Enabled: r.Enabled}
		}
		set, err := rules.Compile(rs, lists)
		if err != nil {
			return err
		}
		g.rules[room.ID] = set
	}
	pages := []string{room.CustomPageHTML}
	for _, ev := range room.Events {
		if ev.Overrides.CustomPageHTML != nil {
			pages = append(pages, *ev.Overrides.CustomPageHTML)
		}
	}
	for _, p := range pages {
		if p == "" || g.custom[p] != nil {
			continue
		}
		t, err := web.LoadCustom(p)
		if err != nil {
			return err
		}
		g.custom[p] = t
	}
	return nil
}

// NewBufferPool returns the httputil.BufferPool the gate copies responses
// through: without one, ReverseProxy allocates 32 KB for every response,
// and the garbage it makes costs more CPU than the rest of an admitted
// request. usher bench's tuned reference proxy uses it too.
func NewBufferPool() httputil.BufferPool {
	return bufferPool{&sync.Pool{New: func() any { return new([bufferSize]byte) }}}
}

const bufferSize = 32 << 10

// bufferPool pools fixed arrays, so that Put turns the slice back into
// its array pointer without allocating (a pool of *[]byte would allocate
// a slice header on every Put).
type bufferPool struct{ p *sync.Pool }

func (bp bufferPool) Get() []byte { return bp.p.Get().(*[bufferSize]byte)[:] }

func (bp bufferPool) Put(b []byte) {
	if cap(b) == bufferSize {
		bp.p.Put((*[bufferSize]byte)(b[:bufferSize]))
	}
}

// viaProxy reports whether t sends requests to any of the origins through
// an HTTP proxy (HTTP_PROXY in the environment): originClient does not.
func viaProxy(t *http.Transport, def *url.URL, origins map[*usher.Room]*url.URL) bool {
	if t.Proxy == nil {
		return false
	}
	check := func(u *url.URL) bool {
		if u == nil {
			return false
		}
		p, err := t.Proxy(&http.Request{Method: http.MethodGet, URL: u, Header: http.Header{}})
		return err != nil || p != nil
	}
	if check(def) {
		return true
	}
	for _, u := range origins {
		if check(u) {
			return true
		}
	}
	return false
}

// parseOrigin parses an absolute http or https URL.
func parseOrigin(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http or https URL", s)
	}
	return u, nil
}

// NewTransport returns the transport the gate proxies through when
// Options.Transport is nil: a clone of http.DefaultTransport keeping up to
// 100 idle connections per origin. usher bench's tuned reference proxy
// uses it too, so that the two cannot drift apart.
func NewTransport() *http.Transport {
	var t *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	} else {
		t = &http.Transport{Proxy: http.ProxyFromEnvironment}
	}
	t.MaxIdleConnsPerHost = 100
	return t
}

// ServeHTTP routes the request, decides, and proxies, queues or rejects.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m, err := g.route(r)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	if m.own {
		// Forward auth is not among them: it is answered on its private
		// listener only (ForwardAuth).
		g.serveOwn(w, r, m.ownRest)
		return
	}
	if m.UnknownHost {
		g.fail(w, r, errUnknownHost)
		return
	}
	if r.Method == http.MethodConnect {
		dropBody(w, r)
		// usher proxies requests, not tunnels.
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS")
		server.WriteError(w, r, http.StatusMethodNotAllowed, "CONNECT is not served here")
		return
	}
	d, err := g.decide(r, &m)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	heldTiming(w, m.Held)
	switch d.Outcome {
	case usher.Pass:
		g.forward(w, r, m, d, false)
	case usher.Admit:
		g.forward(w, r, m, d, true)
	default:
		g.render(w, r, m, d)
	}
}

// dropBody makes an answer that does not read the request's body close the
// connection without reading what is left of it: net/http would otherwise
// read up to 256 KB of it, with no deadline, before answering or reusing
// the connection, and a client that sends its body slowly after being told
// to wait would hold the connection for as long as it likes.
func dropBody(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// fail answers err through server.Error, logging with the gate's logger.
func (g *Gate) fail(w http.ResponseWriter, r *http.Request, err error) {
	dropBody(w, r)
	server.Error(w, r.WithContext(server.ContextWithLogger(r.Context(), g.log)), err)
}

// recordHealth counts the origin's answer to a proxied request for its
// room's autopilot: its time to the response's headers and whether it was
// a 5xx.
func (g *Gate) recordHealth(resp *http.Response) {
	if info, _ := resp.Request.Context().Value(proxyKey{}).(*proxyInfo); info != nil && info.health != nil {
		info.health.Record(time.Since(info.start), resp.StatusCode >= 500)
	}
}
