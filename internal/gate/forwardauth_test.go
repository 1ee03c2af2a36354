package gate_test

import (
	"encoding/json"
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

// authStack is a gate used only through forward auth, as a proxy would.
type authStack struct {
	url   string
	store *local.Store
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
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return &authStack{url: srv.URL, store: st}
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
	// An untrusted peer: the gate trusts only 10/8 here.
	st, _ := local.Open(local.Options{})
	defer st.Close()
	keys := []usher.Key{mustKey(t, "k1")}
	ring, _ := ticket.NewRing(keys)
	g, _ := gate.New(gate.Options{Rooms: []*usher.Room{room}, Decider: admission.New(st, admission.Options{}), Sealer: ring,
		Trusted: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}})
	srv := httptest.NewServer(g)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+gate.AuthPath, nil)
	for k, v := range caddyHeaders("/x") {
		req.Header.Set(k, v)
	}
	resp, _ := http.DefaultTransport.RoundTrip(req)
	var body struct{ Error string }
	req.Header.Set("Accept", "application/json")
	resp2, _ := http.DefaultTransport.RoundTrip(req)
	json.NewDecoder(resp2.Body).Decode(&body)
	resp.Body.Close()
	resp2.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(body.Error, "trusted_proxies") {
		t.Fatalf("an untrusted peer: %d %q", resp.StatusCode, body.Error)
	}
}
