package gate

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/server"
)

// proxyKey keys the proxyInfo of a request in its context.
type proxyKey struct{}

// proxyInfo is what rewrite needs to know about one proxied request.
type proxyInfo struct {
	target      *url.URL
	room        string  // for logs; "" when no room matched
	cookie      string  // usher cookie to remove from the request; "" none
	powCookie   string  // the room's proof-of-work cookie, removed with it
	tokenHeader string  // the admission token's header ("": none)
	token       string  // the admission token to send; "" none
	visitor     [8]byte // an admitted visitor's id (origin commands)
	admitted    bool    // visitor is set
	rawPath     string  // the request's path as sent (cookie paths)
	peer        netip.Addr
	peerTrusted bool
	scheme      string
	host        string
	// health records the origin's answer for the room's autopilot (nil:
	// not governed by responses); start is when the request left.
	health *autopilot.Recorder
	start  time.Time
}

// forward proxies r to the origin of m's room (the default origin when
// there is no room, or the room has no origin of its own), with the ticket
// cookie set when it changed. Admitted requests (admit) lose the usher
// cookie on the way; passed ones keep the request as it came.
func (g *Gate) forward(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision, admit bool) {
	target := g.defaultOrigin
	ctx := &proxyContext{Context: r.Context()}
	info := &ctx.info
	info.scheme, info.host = m.Scheme, m.Host
	if m.Room != nil {
		target = g.origins[m.Room]
		info.room = m.Room.ID
		if admit {
			info.cookie = m.Room.CookieName()
			info.powCookie = PoWCookie(m.Room)
		}
	}
	g.setTicket(w, r, m, d)
	if target == nil {
		if m.Room == nil {
			g.fail(w, r, usher.Errorf(usher.ENotFound, "nothing is served at this address"))
			return
		}
		g.log.LogAttrs(r.Context(), slog.LevelError, "room has no origin",
			slog.String("request_id", server.RequestIDFrom(r.Context())), slog.String("room", m.Room.ID))
		server.WriteError(w, r, http.StatusBadGateway, "the site is not reachable through the waiting room")
		return
	}
	if g.tokens != nil {
		info.tokenHeader = g.tokens.Header
		if admit {
			info.token = g.admissionToken(r, m, d)
		}
	}
	if admit && d.Outcome == usher.Admit {
		info.visitor, info.admitted, info.rawPath = d.Ticket.VisitorID, true, r.URL.EscapedPath()
	}
	info.target = target
	if m.Room != nil && len(g.health) > 0 {
		if info.health = g.health[m.Room]; info.health != nil {
			info.start = time.Now()
		}
	}
	info.peer = server.PeerAddr(r)
	info.peerTrusted = server.IsTrusted(info.peer, g.trusted)
	if upgrading(r.Header) {
		// A tunnel (WebSocket, h2c): ReverseProxy's own.
		g.proxy.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	g.pass(w, r, ctx)
}

// proxyContext is a proxied request's context: its parent with the
// proxyInfo under proxyKey, and what the proxy core needs for the request,
// in one allocation.
type proxyContext struct {
	context.Context
	info proxyInfo

	// for pass:
	url   url.URL
	body  bodyReader
	trace httptrace.ClientTrace
	w     http.ResponseWriter // for 1xx answers, under mu until done
	mu    sync.Mutex
	done  bool // the final answer came: no more 1xx
}

func (c *proxyContext) Value(key any) any {
	if _, ok := key.(proxyKey); ok {
		return &c.info
	}
	return c.Context.Value(key)
}

// rewrite builds the outgoing request: the origin's URL (and Host), usher's
// cookie and any client-sent X-Usher-* headers removed, X-Forwarded-For,
// -Proto and -Host from the client info. ReverseProxy has already removed
// hop-by-hop headers and the client's Forwarded and X-Forwarded-* headers;
// X-Forwarded-For keeps the earlier hops only when the peer is trusted.
//
// Responses are streamed: ReverseProxy flushes at once for event streams
// and bodies of unknown length, and the default FlushInterval (0) suffices.
func (g *Gate) rewrite(pr *httputil.ProxyRequest) {
	info, _ := pr.In.Context().Value(proxyKey{}).(*proxyInfo)
	if info == nil {
		return // not reached: forward always sets it; the request then fails with a 502
	}
	pr.SetURL(info.target)
	h := pr.Out.Header
	var folded string
	if info.tokenHeader != "" {
		folded = g.tokens.folded
	}
	for k := range h {
		if hasNamePrefix(k, "x-usher-") || isForwarding(k) || (folded != "" && sameName(k, folded)) {
			delete(h, k)
		}
	}
	if info.cookie != "" {
		stripCookie(h, info.cookie)
		stripCookie(h, info.powCookie)
	}
	// The headers set here share one backing array (one allocation, not
	// one per header); their keys are canonical already, as Set would make
	// them (tokenHeader is canonicalized by Tokens.init).
	vals := make([]string, 0, 4)
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if info.token != "" {
		// Only usher says a visitor came through the line.
		set(info.tokenHeader, info.token)
	}
	g.setForwarded(set, pr.In.Header, info)
}

// proxyError answers a request the origin did not answer: 502 with the
// branded page, the cause in the log. A client that went away is only noted.
func (g *Gate) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	info, _ := r.Context().Value(proxyKey{}).(*proxyInfo)
	level := slog.LevelError
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("request_id", server.RequestIDFrom(r.Context())),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Any("error", err),
	}
	if info != nil {
		attrs = append(attrs, slog.String("room", info.room), slog.String("origin", info.target.Redacted()))
	}
	if info != nil && info.health != nil && r.Context().Err() == nil {
		// The origin failed to answer (a visitor who hung up says nothing
		// of the origin).
		info.health.Record(time.Since(info.start), true)
	}
	g.log.LogAttrs(r.Context(), level, "origin request failed", attrs...)
	server.WriteError(w, r, http.StatusBadGateway, "the site did not answer, retry in a moment")
}
