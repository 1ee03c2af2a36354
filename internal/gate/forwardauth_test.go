package gate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// authStack is a gate used only through forward auth, as a proxy would:
// url is its private forward-auth listener, public its public one.
type authStack struct {
	url    string
	public string
	store  *local.Store
}

func newAuthStack(t *testing.T, rooms ...*usher.Room) *authStack {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys := []usher.Key{mustKey(t, "k1")}
	ring, _ := ticket.NewRing(keys)
	signer, _ := token.New(keys, token.Options{})
	notes, _ := guard.NewNotes(keys, "page")
	g, err := gate.New(gate.Options{Rooms: rooms, DefaultOrigin: "http://127.0.0.1:1", Decider: admission.New(st, admission.Options{}),
		Sealer: ring, Tokens: &gate.Tokens{Signer: signer}, Notes: notes,
		Trusted: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.ForwardAuth())
	t.Cleanup(srv.Close)
	pub := httptest.NewServer(g)
	t.Cleanup(pub.Close)
	return &authStack{url: srv.URL, public: pub.URL, store: st}
}

type authAnswer struct {
	status  int
	header  http.Header
	body    string
	cookies []*http.Cookie
}

// ask asks as Caddy and Traefik do: X-Forwarded-* headers.
func (a *authStack) ask(t *testing.T, path string, hdr map[string]string, cookies ...*http.Cookie) authAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, a.url+path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return authAnswer{resp.StatusCode, resp.Header, string(b), resp.Cookies()}
}

func caddyHeaders(uri string) map[string]string {
	return map[string]string{"X-Forwarded-Method": "GET", "X-Forwarded-Uri": uri, "X-Forwarded-Host": "shop.example",
		"X-Forwarded-Proto": "https", "X-Forwarded-For": "198.51.100.7"}
}

func ticketOf(a authAnswer) *http.Cookie {
	for _, c := range a.cookies {
		if strings.HasPrefix(c.Name, "__usher_wr") {
			return c
		}
	}
	return nil
}

// TestForwardAuth: one decision, rendered for a proxy: through with the
// cookie and the token, or the waiting page (never a 2xx), or for nginx a
// 401 and a page to fetch; the proxy's headers believed only from trusted
// peers; a check-in asked about twice counted once.
func TestForwardAuth(t *testing.T) {
	room := fullRoom()
	room.JSONResponseEnabled = true
	room.Rules = []usher.Rule{{Description: "static", Expression: `path.startsWith("/drop/static/")`, Action: "bypass_waiting_room", Enabled: true}}
	a := newAuthStack(t, room)

	first := a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy?x=1"))
	if first.status != 200 || ticketOf(first) == nil || first.header.Get(token.DefaultHeader) == "" {
		t.Fatalf("first visitor: %d, cookie %v, token %q; want 200 with both", first.status, ticketOf(first), first.header.Get(token.DefaultHeader))
	}
	if !ticketOf(first).Secure {
		t.Error("the cookie for an https site through the proxy is not Secure")
	}
	second := a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy"))
	if second.status != http.StatusTooManyRequests || !strings.Contains(second.body, "<html") || ticketOf(second) == nil {
		t.Fatalf("second visitor: %d, cookie %v; want 429 with the waiting page and a cookie", second.status, ticketOf(second))
	}
	json := caddyHeaders("/drop/buy")
	json["Accept"] = "application/json"
	if j := a.ask(t, gate.AuthPath, json); j.status != 429 || !strings.Contains(j.body, "usherWaitingRoom") {
		t.Fatalf("an app: %d %q", j.status, j.body)
	}
	// nginx: 401 and a page note; the page shows the waiting room.
	nginx := map[string]string{"X-Original-URI": "/drop/buy", "X-Original-Method": "GET", "X-Forwarded-Host": "shop.example", "X-Forwarded-For": "198.51.100.9"}
	n := a.ask(t, gate.AuthPath+"?mode=nginx", nginx)
	page := n.header.Get("X-Usher-Page")
	if n.status != 401 || !strings.HasPrefix(page, gate.PagePath) {
		t.Fatalf("nginx mode: %d, page %q", n.status, page)
	}
	p := a.ask(t, page, nil)
	if p.status != 200 || !strings.Contains(p.body, "<html") || ticketOf(p) == nil {
		t.Fatalf("the page note: %d, cookie %v", p.status, ticketOf(p))
	}
	if bad := a.ask(t, page[:len(page)-3]+"AAA", nil); bad.status != 400 {
		t.Fatalf("a forged page note: %d", bad.status)
	}
	// The waiter checks in through the proxy, which asks twice (nginx's
	// auth_request and a retry): counted once.
	c := ticketOf(second)
	st1, _ := a.store.Stats(t.Context(), room.ID, time.Now())
	a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy"), c)
	a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy"), c)
	st2, _ := a.store.Stats(t.Context(), room.ID, time.Now())
	if st2.Waiting != st1.Waiting {
		t.Fatalf("waiting %d -> %d after one visitor's request asked about twice", st1.Waiting, st2.Waiting)
	}
	// A bypass rule: through, no cookie, no token.
	if b := a.ask(t, gate.AuthPath, caddyHeaders("/drop/static/a.css")); b.status != 200 || ticketOf(b) != nil || b.header.Get(token.DefaultHeader) != "" {
		t.Fatalf("bypassed: %d %v %q", b.status, ticketOf(b), b.header.Get(token.DefaultHeader))
	}
	// Envoy: the original path after the auth path, the method kept.
	envoy := map[string]string{"X-Forwarded-For": "198.51.100.10"}
	req, _ := http.NewRequest(http.MethodGet, a.url+gate.AuthPath+"/drop/buy?y=2", nil)
	req.Host = "shop.example"
	for k, v := range envoy {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 429 {
		t.Fatalf("envoy form: %d, want the waiting answer", resp.StatusCode)
	}
}

// TestForwardAuthBadInput: no original URI, an absolute one, a bad method,
// an untrusted peer: a clear error, and nobody let through.
func TestForwardAuthBadInput(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	a := newAuthStack(t, room)
	for name, tc := range map[string]struct {
		hdr  map[string]string
		want int
		text string
	}{
		"no uri":           {map[string]string{"X-Forwarded-Host": "shop.example"}, 400, "X-Forwarded-Uri"},
		"absolute uri":     {map[string]string{"X-Forwarded-Uri": "http://evil/x"}, 400, "original URI"},
		"bad method":       {map[string]string{"X-Forwarded-Uri": "/x", "X-Forwarded-Method": "G ET"}, 400, "X-Forwarded-Method"},
		"uris disagree":    {map[string]string{"X-Original-Uri": "/beer", "X-Forwarded-Uri": "/static/x.css"}, 400, "disagree"},
		"methods disagree": {map[string]string{"X-Original-Uri": "/beer", "X-Original-Method": "POST", "X-Forwarded-Method": "GET"}, 400, "disagree"},
	} {
		got := a.ask(t, gate.AuthPath, tc.hdr)
		if got.status != tc.want || !strings.Contains(got.body, tc.text) {
			t.Errorf("%s: %d %q, want %d naming %s", name, got.status, got.body, tc.want, tc.text)
		}
	}
	// ingress-nginx's whole URL: its path and query are the request's.
	if got := a.ask(t, gate.AuthPath, map[string]string{"X-Original-Url": "https://shop.example/drop/x?y=1", "X-Forwarded-Host": "shop.example"}); got.status != 200 {
		t.Errorf("an absolute X-Original-URL: %d %q", got.status, got.body)
	}
}

// TestForwardAuthNotPublic: the public listener does not answer forward
// auth in any spelling, even to a trusted peer with the proxy's headers:
// its own spelling is 404, the others are refused (400) or decided as the
// room's pages they could be read as (the room is full: wait), and none
// brings an admission token. Before, /__usher/auth answered
// there, and "/__USHER/auth" or "/x/../__usher/auth" with it.
func TestForwardAuthNotPublic(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	a := newAuthStack(t, room)
	if first := a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy")); first.status != 200 {
		t.Fatalf("the first visitor: %d", first.status)
	}
	for _, p := range []string{"/__usher/auth", "/__usher/auth/", "/__usher/auth?mode=nginx", "/__usher/auth/drop/x",
		"/__USHER/auth", "/__usher/AUTH", "/x/../__usher/auth", "/%5f%5fusher/auth", "/__usher%2fauth", "//__usher/auth",
		"/__usher//auth", "/__usher/./auth", "/__usher;x/auth", "/__usher/auth;x", "/__usher/%61uth", "/__usher\\auth"} {
		req, err := http.NewRequest(http.MethodGet, a.public, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written
		for k, v := range caddyHeaders("/drop/buy") {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		literal := strings.HasPrefix(p, gate.OwnPrefix)
		if out := resp.Header.Get(gate.OutcomeHeader); out == "admit" || out == "pass" || resp.Header.Get(token.DefaultHeader) != "" ||
			(literal && resp.StatusCode != 404 && resp.StatusCode != 400) || (!literal && out != "wait" && resp.StatusCode != 400) {
			t.Errorf("%s on the public listener: %d, token %q: %.200s", p, resp.StatusCode, resp.Header.Get(token.DefaultHeader), b)
		}
	}
}

// TestForwardAuthOwnLookalikes: forward auth lets a path through unasked
// only when it is literally usher's own; a path a proxy or an origin could
// read as a page of the full room is decided as that page (wait) or
// refused. Before, the gate answered 200 for any path that cleaned and
// folded to /__usher/, and the proxy sent it on to the origin (issue 21,
// attack 1: 5 of 6 crafted paths reached the origin behind nginx).
func TestForwardAuthOwnLookalikes(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	a := newAuthStack(t, room)
	if first := a.ask(t, gate.AuthPath, caddyHeaders("/drop/buy")); first.status != 200 {
		t.Fatalf("the first visitor: %d", first.status)
	}
	for _, uri := range []string{"/__USHER/../shop", "/%5f%5fusher/x", "/x/..%2f__usher/", "//__usher/", "/__usher;x/../shop",
		"/__usher/..;/shop", "/__usher/%2e%2e/shop", "/__usher/../shop", "/__Usher/assets/usher.svg", "/shop%2f..%2f__usher%2fx",
		"/a%5c..%5c__usher/x", "/__usher//assets/x", "/__usher/auth", "/__usher/auth?mode=nginx"} {
		got := a.ask(t, gate.AuthPath, caddyHeaders(uri))
		if got.status < 300 || got.header.Get(token.DefaultHeader) != "" {
			t.Errorf("%s: %d, token %q: let through", uri, got.status, got.header.Get(token.DefaultHeader))
		}
	}
	// usher's own paths as they are: through (the proxy sends them to
	// usher).
	if got := a.ask(t, gate.AuthPath, caddyHeaders("/__usher/assets/usher.svg")); got.status != 200 || got.header.Get(token.DefaultHeader) != "" {
		t.Errorf("/__usher/assets/usher.svg: %d", got.status)
	}
}
