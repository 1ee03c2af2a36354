package gate

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

// AuthPath is the forward-auth endpoint, answered on the private
// forward-auth listener only (ForwardAuth; config forward_auth.listen): the
// public listener answers it 404 in every spelling. A proxy in front of
// the site (nginx auth_request, Caddy forward_auth, Traefik ForwardAuth,
// Envoy ext_authz) asks it about each request; usher answers from the same
// decision the reverse proxy makes (Evaluate), rendered for the proxy:
//
//   - let through (admitted, or no room, a suspended room, a bypass rule):
//     200 with the ticket's Set-Cookie and the admission token in its
//     header, for the proxy to copy;
//   - not yet (waiting, a challenge, turned away): the waiting page, its
//     JSON, the challenge or the reject page itself with the room's status
//     code (429 or 403 when that is 2xx, which the proxy would take for a
//     yes), for proxies that pass a refusal on as it is;
//   - with ?mode=nginx (nginx's auth_request takes only 2xx, 401 and 403):
//     401 with X-Usher-Page, the path of a signed page (PagePath) that
//     nginx's error_page fetches and shows.
//
// The original request comes from the proxy's headers (every peer of the
// private listener is trusted for them): X-Forwarded-Method or X-Original-Method,
// X-Forwarded-Uri or X-Original-URI (or, for Envoy, the path after
// AuthPath), X-Forwarded-Host (else Host), X-Forwarded-Proto and
// X-Forwarded-For; its Cookie, Accept, Accept-Language and User-Agent
// headers are the visitor's.
const AuthPath = OwnPrefix + "auth"

// OutcomeHeader marks the answers usher makes itself (and forward-auth
// answers) with the decision's outcome: wait, reject, challenge, admit,
// pass. The live page tells them from the site's by it.
const OutcomeHeader = "X-Usher-Outcome"

// PagePath is where a forward-auth answer in nginx mode sends the proxy for
// the page to show: PagePath + a signed note of the decision.
const PagePath = OwnPrefix + "page/"

// pageNoteTTL is how long a page note may be fetched after its answer.
const pageNoteTTL = time.Minute

// authHeaders are the headers a proxy uses to describe the original
// request; they are not the visitor's and are dropped from it.
var authHeaders = []string{"X-Forwarded-Method", "X-Original-Method", "X-Forwarded-Uri", "X-Original-Uri",
	"X-Original-Url", "X-Forwarded-Host", "X-Original-Host", "X-Forwarded-Proto", "X-Forwarded-For",
	"X-Forwarded-Port", "X-Forwarded-Prefix", "X-Real-Ip", "Forwarded", "Content-Length"}

// ForwardAuth returns the handler of the private forward-auth listener:
// every peer of it is trusted for the forwarded headers (bind it to an
// address only the proxy reaches). It answers forward auth at AuthPath
// (and, for Envoy, below it) and at any path that is not usher's own;
// usher's own paths (the page notes of nginx mode, the assets) get their
// usual answers.
func (g *Gate) ForwardAuth() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isAuth(r.URL.EscapedPath()) {
			g.serveAuth(w, r)
			return
		}
		rd, err := readPath(r.URL)
		if err != nil {
			g.fail(w, r, err)
			return
		}
		if rd.own {
			g.serveOwn(w, r, rd.rest)
			return
		}
		g.serveAuth(w, r)
	})
}

// isAuth reports whether the escaped path esc is AuthPath or below it,
// letter case included.
func isAuth(esc string) bool {
	return strings.HasPrefix(esc, AuthPath) && (len(esc) == len(AuthPath) || esc[len(AuthPath)] == '/')
}

// serveAuth answers one forward-auth request.
//
// The original request is read once (readPath), as the origin will get
// it: only a path sent literally under OwnPrefix, in the one spelling
// every server reads alike, is let through as usher's own (the proxy sends
// it to usher); any other spelling of it is either refused or decided as
// the page of the room it could become.
func (g *Gate) serveAuth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	orig, ip, scheme, host, err := g.originalRequest(r)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	m, err := g.routeFor(orig, ip, scheme, host)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	m.Auth = true
	m.TrustedPeer = true // originalRequest answers trusted peers only
	if m.own {
		if isAuth(orig.URL.EscapedPath()) {
			// A visitor asking for the questions: never through.
			g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
			return
		}
		// usher's own paths (the page's assets), literally: through, to
		// usher.
		w.WriteHeader(http.StatusOK)
		return
	}
	d, err := g.decide(orig, &m)
	if err != nil {
		g.fail(w, r, err)
		return
	}
	heldTiming(w, m.Held)
	switch d.Outcome {
	case usher.Pass, usher.Admit:
		g.setTicket(w, orig, m, d)
		if tok := g.admissionToken(orig, m, d); tok != "" {
			w.Header().Set(g.tokens.Header, tok)
		}
		w.Header().Set(OutcomeHeader, d.Outcome.String())
		if len(w.Header()["Set-Cookie"]) == 0 {
			setAuthCache(w, m, d)
		}
		w.WriteHeader(http.StatusOK)
		return
	}
	if strings.EqualFold(r.URL.Query().Get("mode"), "nginx") {
		g.nginxRefusal(w, orig, m, d)
		return
	}
	g.render(w, orig, m, d)
}

// render writes an answer that does not let the request through: the
// waiting page, the challenge or the reject page.
func (g *Gate) render(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	// The live page's script tells usher's answers from the site's by it.
	w.Header().Set(OutcomeHeader, d.Outcome.String())
	switch d.Outcome {
	case usher.Wait:
		g.wait(w, r, m, d)
	case usher.Challenge:
		g.challenge(w, r, m, d)
	case usher.Turn:
		g.reject(w, r, m, d)
	default:
		g.fail(w, r, fmt.Errorf("room %q: decision with outcome %v", m.Room.ID, d.Outcome))
	}
}

// originalRequest rebuilds the request a proxy asks about, with the
// client's address, the scheme and the host, from the forward-auth request
// r, asked on the private listener: its peer is trusted, as are
// trusted_proxies. Its headers are r's (the visitor's) without the proxy's
// own.
func (g *Gate) originalRequest(r *http.Request) (*http.Request, netip.Addr, string, string, error) {
	peer := server.PeerAddr(r)
	trusted := g.trusted
	if peer.IsValid() {
		trusted = append(append([]netip.Prefix(nil), trusted...), netip.PrefixFrom(peer, peer.BitLen()))
	}
	if !server.IsTrusted(peer, trusted) {
		return nil, netip.Addr{}, "", "", usher.Errorf(usher.EForbidden,
			"forward auth is answered only for trusted_proxies: %s is not one", peer)
	}
	// one returns the value the named headers agree on: a question whose
	// headers describe two requests (the proxy's, and a visitor's passed
	// on) is answered for neither.
	one := func(names ...string) (string, error) {
		var val, from string
		for _, n := range names {
			vs := r.Header.Values(n)
			if len(vs) > 1 {
				return "", usher.Errorf(usher.EInvalid, "%s is sent %d times: the proxy must set it once", n, len(vs))
			}
			v := ""
			if len(vs) == 1 {
				v = strings.TrimSpace(vs[0])
			}
			if n == "X-Original-Url" && v != "" {
				// ingress-nginx sends the whole URL: its path and query.
				if u, err := url.Parse(v); err == nil && u.IsAbs() {
					v = u.RequestURI()
				}
			}
			switch {
			case v == "":
			case val == "":
				val, from = v, n
			case v != val:
				return "", usher.Errorf(usher.EInvalid, "%s and %s disagree (%.80q, %.80q): the proxy must set them, not pass on the visitor's", from, n, val, v)
			}
		}
		return val, nil
	}
	uri, err := one("X-Forwarded-Uri", "X-Original-Uri", "X-Original-Url")
	if err != nil {
		return nil, netip.Addr{}, "", "", err
	}
	method, err := one("X-Forwarded-Method", "X-Original-Method")
	if err != nil {
		return nil, netip.Addr{}, "", "", err
	}
	if uri == "" {
		// Envoy's ext_authz appends the original path to its path prefix,
		// and keeps the method.
		esc := r.URL.EscapedPath()
		if len(esc) > len(AuthPath) && isAuth(esc) {
			uri = esc[len(AuthPath):]
			if r.URL.RawQuery != "" {
				uri += "?" + r.URL.RawQuery
			}
			if method == "" {
				method = r.Method
			}
		}
	}
	if uri == "" {
		return nil, netip.Addr{}, "", "", usher.Errorf(usher.EInvalid,
			"forward auth needs the original URI: X-Forwarded-Uri (Traefik, Caddy), X-Original-URI (nginx), or Envoy's path after %s", AuthPath)
	}
	u, err := url.ParseRequestURI(uri)
	if err != nil || !strings.HasPrefix(uri, "/") || u.Host != "" || len(uri) > 8192 {
		return nil, netip.Addr{}, "", "", usher.Errorf(usher.EInvalid, "the original URI must be a path with its query, got %.100q", uri)
	}
	if method == "" {
		method = http.MethodGet
	}
	if !validMethod(method) {
		return nil, netip.Addr{}, "", "", usher.Errorf(usher.EInvalid, "X-Forwarded-Method must be an HTTP method, got %.40q", method)
	}
	ip, scheme, host := server.ClientInfo(r, trusted)
	if h, err := one("X-Forwarded-Host", "X-Original-Host"); err != nil {
		return nil, netip.Addr{}, "", "", err
	} else if h != "" && r.Header.Get("X-Forwarded-Host") == "" {
		host = h
	}
	if host == "" || strings.ContainsAny(host, " /\\?#@\r\n") {
		return nil, netip.Addr{}, "", "", usher.Errorf(usher.EInvalid, "X-Forwarded-Host (or Host) must be the original host, got %.100q", host)
	}
	orig := r.Clone(r.Context())
	orig.Method, orig.URL, orig.RequestURI, orig.Host = method, u, uri, host
	orig.Body, orig.ContentLength, orig.TransferEncoding = http.NoBody, 0, nil
	orig.RemoteAddr = net.JoinHostPort(ip.String(), "0")
	for _, h := range authHeaders {
		orig.Header.Del(h)
	}
	return orig, ip, scheme, host, nil
}

// validMethod reports whether m is an HTTP method token.
func validMethod(m string) bool {
	if m == "" || len(m) > 32 {
		return false
	}
	for i := 0; i < len(m); i++ {
		if !validHeaderByte(m[i]) {
			return false
		}
	}
	return true
}

// validHeaderByte reports whether c is an RFC 9110 tchar.
func validHeaderByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// pageNote is a refused forward-auth decision, as nginx's error_page
// fetches it from PagePath: enough to render the page again, and the
// Set-Cookie headers of the answer.
type pageNote struct {
	Room       string   `json:"r"`
	At         int64    `json:"a"`
	Outcome    uint8    `json:"o"`
	Position   int64    `json:"p,omitempty"`
	WaitKnown  bool     `json:"k,omitempty"`
	Wait       int64    `json:"w,omitempty"`
	Low        int64    `json:"l,omitempty"`
	High       int64    `json:"h,omitempty"`
	Refresh    int64    `json:"f,omitempty"`
	Stats      [4]int64 `json:"s"`
	OverClient bool     `json:"oc,omitempty"`
	Challenge  string   `json:"c,omitempty"`
	Difficulty int      `json:"d,omitempty"`
	ChallExp   int64    `json:"ce,omitempty"`
	Cookies    []string `json:"sc,omitempty"`
}

// nginxRefusal answers nginx's auth_request: 401 and the path of a page
// note to show, with the ticket's Set-Cookie (the page sets it too).
func (g *Gate) nginxRefusal(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	if g.notes == nil {
		g.fail(w, r, usher.Errorf(usher.EUnavailable, "forward auth in nginx mode is not available"))
		return
	}
	g.setTicket(w, r, m, d)
	n := pageNote{
		Room: m.Room.ID, At: m.At.UnixMilli(), Outcome: uint8(d.Outcome), Position: d.Position,
		WaitKnown: d.WaitKnown, Wait: d.EstimatedWait.Milliseconds(), Low: d.WaitLow.Milliseconds(),
		High: d.WaitHigh.Milliseconds(), Refresh: d.RefreshAfter.Milliseconds(),
		Stats:      [4]int64{d.Stats.Active, d.Stats.Waiting, d.Stats.AdmittedLastMinute, d.Stats.Slots},
		OverClient: d.OverClient, Challenge: d.Challenge, Difficulty: d.Difficulty,
		Cookies: w.Header().Values("Set-Cookie"),
	}
	if !d.ChallengeExpires.IsZero() {
		n.ChallExp = d.ChallengeExpires.Unix()
	}
	b, _ := json.Marshal(n)
	w.Header().Set("X-Usher-Page", PagePath+g.notes.Sign(b, m.At.Add(pageNoteTTL)))
	w.Header().Set(OutcomeHeader, d.Outcome.String())
	server.WriteError(w, r, http.StatusUnauthorized, "not yet: show "+PagePath)
}

// servePage shows the page of a forward-auth refusal in nginx mode: the
// decision the note holds, rendered for the visitor's request (its
// language, HTML or JSON) with the room's status code, and its cookies.
// Nothing is decided again.
func (g *Gate) servePage(w http.ResponseWriter, r *http.Request, text string) {
	if g.notes == nil {
		g.fail(w, r, usher.Errorf(usher.ENotFound, "no such page"))
		return
	}
	now := g.now()
	raw, err := g.notes.Open(text, now)
	var n pageNote
	if err == nil {
		err = json.Unmarshal(raw, &n)
	}
	room := g.rooms[n.Room]
	if err != nil || room == nil {
		server.WriteError(w, r, http.StatusBadRequest, "this page has expired: reload")
		return
	}
	at := time.UnixMilli(n.At).UTC()
	sched := room.At(at)
	d := usher.Decision{
		Outcome: usher.Outcome(n.Outcome), Position: n.Position, WaitKnown: n.WaitKnown,
		EstimatedWait: time.Duration(n.Wait) * time.Millisecond, WaitLow: time.Duration(n.Low) * time.Millisecond,
		WaitHigh: time.Duration(n.High) * time.Millisecond, RefreshAfter: time.Duration(n.Refresh) * time.Millisecond,
		Settings: sched.Settings, Phase: sched.Phase, Event: sched.Event, QueueAll: sched.QueueAll,
		Stats:      usher.RoomStats{Active: n.Stats[0], Waiting: n.Stats[1], AdmittedLastMinute: n.Stats[2], Slots: n.Stats[3]},
		OverClient: n.OverClient, Challenge: n.Challenge, Difficulty: n.Difficulty,
	}
	if n.ChallExp != 0 {
		d.ChallengeExpires = time.Unix(n.ChallExp, 0).UTC()
	}
	for _, c := range n.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	m := Match{Room: room, At: at}
	m.ClientIP, m.Scheme, m.Host = server.ClientInfo(r, g.trusted)
	g.render(w, r, m, d)
}
