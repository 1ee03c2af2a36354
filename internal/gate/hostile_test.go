package gate_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
)

// These tests play clients that lie to the gate: other hosts, other
// readings of a path, copied cookies, floods of new visitors. Each is a
// defect of issue 8 and fails without its fix.

// hostileGate is a real gate (engine, store, ring) in front of a counting
// origin, on a real listener.
type hostileGate struct {
	url     string
	origin  *httptest.Server
	reached atomic.Int64 // requests the origin got
}

func newHostileGate(t *testing.T, set func(*gate.Options), rooms ...*usher.Room) *hostileGate {
	t.Helper()
	h := &hostileGate{}
	h.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.reached.Add(1)
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, "inside "+r.URL.Path)
	}))
	t.Cleanup(h.origin.Close)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ring, err := ticket.NewRing([]usher.Key{mustKey(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	opts := gate.Options{Rooms: rooms, DefaultOrigin: h.origin.URL, Decider: admission.New(st, admission.Options{}), Sealer: ring}
	if set != nil {
		set(&opts)
	}
	g, err := gate.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	h.url = srv.URL
	return h
}

// raw sends a request written by hand and returns the status code.
func (h *hostileGate) raw(t *testing.T, request string) int {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("%q: %v", request, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fullRoom is a room on shop.example/drop that one session fills.
func fullRoom() *usher.Room {
	return &usher.Room{ID: "drop", Name: "Drop", Routes: []usher.Route{{Host: "shop.example", Path: "/drop"}},
		Settings: usher.Settings{TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: time.Hour, RefreshInterval: 10 * time.Second}}
}

// TestNoSideDoorThroughAnotherHost: while a room on a named host is full,
// no request for its path reaches the origin by naming another host, no
// host, or an absolute URI (issue 8, defect 6).
func TestNoSideDoorThroughAnotherHost(t *testing.T) {
	h := newHostileGate(t, func(o *gate.Options) { o.RejectUnknownHosts = true }, fullRoom())
	if got := h.raw(t, "GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n"); got != http.StatusOK {
		t.Fatalf("the first visitor: %d, want admitted", got)
	}
	if h.reached.Load() != 1 {
		t.Fatal("the first visitor did not reach the origin")
	}
	for _, req := range []string{
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",                        // the room: waits
		"GET /drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",                                   // another host
		"GET /drop/buy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",                           // the address
		"GET /drop/buy HTTP/1.0\r\n\r\n",                                              // no host at all
		"GET http://other/drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",            // absolute form
		"GET http://other:80/drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",         // with a port
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",                                       // asterisk form
		"CONNECT shop.example:443 HTTP/1.1\r\nHost: shop.example:443\r\n\r\n",         // a tunnel
		"GET //x/drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",                                // a path like a host
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example.evil\r\n\r\n",                   // a longer name
		"GET /drop/buy HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: shop.example\r\n\r\n", // untrusted header
	} {
		status := h.raw(t, req)
		if h.reached.Load() != 1 {
			t.Fatalf("%q reached the origin (status %d)", req, status)
		}
	}
	// The room's own host, on paths no room covers, still reaches the
	// origin: the operator put only /drop in a room.
	if got := h.raw(t, "GET /about HTTP/1.1\r\nHost: SHOP.example.:8080\r\n\r\n"); got != http.StatusOK || h.reached.Load() != 2 {
		t.Fatalf("another path on the room's host: %d", got)
	}
}

// TestUnknownHostsPassWhenAsked: unknown_hosts pass keeps the old
// behaviour for operators who choose it (and usher check warns).
func TestUnknownHostsPassWhenAsked(t *testing.T) {
	h := newHostileGate(t, nil, fullRoom())
	if got := h.raw(t, "GET /drop/buy HTTP/1.1\r\nHost: x\r\n\r\n"); got != http.StatusOK || h.reached.Load() != 1 {
		t.Fatalf("another host with unknown hosts passed: %d", got)
	}
}

// TestRulesReadEveryPath: a bypass rule bypasses only when it holds for
// every reading of the path routing considers (issue 8, defect 7).
func TestRulesReadEveryPath(t *testing.T) {
	room := fullRoom()
	room.Rules = []usher.Rule{{Description: "static", Expression: `path.startsWith("/drop/static/")`, Action: "bypass_waiting_room", Enabled: true}}
	h := newHostileGate(t, func(o *gate.Options) { o.RejectUnknownHosts = true }, room)
	h.raw(t, "GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n") // fills the room
	if got := h.raw(t, "GET /drop/static/app.css HTTP/1.1\r\nHost: shop.example\r\n\r\n"); got != http.StatusOK || h.reached.Load() != 2 {
		t.Fatalf("a static file: %d, want bypassed", got)
	}
	for _, p := range []string{
		"/drop/static/..;/buy",
		"/drop/static/..%3B/buy",
		"/drop/static/x;/../../buy",
		"/drop/static/%2e%2e;/buy",
		"/Drop/Static/..;/BUY",
	} {
		h.raw(t, "GET "+p+" HTTP/1.1\r\nHost: shop.example\r\n\r\n")
		if h.reached.Load() != 2 {
			t.Fatalf("%s was bypassed past the full room", p)
		}
	}
}

// TestCopiedCookieOnAnotherClient: with binding on, an admitted cookie
// copied to another client (another network, or another browser) opens
// there as a new visitor.
func TestCopiedCookieOnAnotherClient(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	room.TicketBinding = usher.TicketBinding{ClientPrefix: true, UserAgent: true}
	h := newHostileGate(t, func(o *gate.Options) {
		o.Trusted = trustedLoopback()
	}, room)
	get := func(ip, ua string, c *http.Cookie) (*http.Response, *http.Cookie) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, h.url+"/buy", nil)
		req.Header.Set("X-Forwarded-For", ip)
		req.Header.Set("User-Agent", ua)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, sc := range resp.Cookies() {
			if sc.Name == room.CookieName() {
				return resp, sc
			}
		}
		return resp, c
	}
	resp, cookie := get("198.51.100.7", "Browser/1", nil)
	if resp.Header.Get("X-Origin") != "1" {
		t.Fatal("the first visitor was not admitted")
	}
	if resp, _ := get("198.51.100.7", "Browser/1", cookie); resp.Header.Get("X-Origin") != "1" {
		t.Fatal("the visitor's own cookie did not keep its session")
	}
	if resp, _ := get("198.51.100.99", "Browser/1", cookie); resp.Header.Get("X-Origin") != "1" {
		t.Fatal("the cookie copied to the same /24 did not keep its session (binding to /24 should)")
	}
	for _, c := range []struct{ ip, ua string }{{"203.0.113.9", "Browser/1"}, {"198.51.100.7", "Bot/2"}, {"2001:db8::1", "Browser/1"}} {
		if resp, _ := get(c.ip, c.ua, cookie); resp.Header.Get("X-Origin") == "1" {
			t.Fatalf("the admitted cookie copied to %s %q got in", c.ip, c.ua)
		}
	}
	if n := h.reached.Load(); n != 3 {
		t.Fatalf("the origin got %d requests, want 3 (the visitor's own and its /24)", n)
	}
}

// TestClientOverLimitGets429: in reject mode a client over its per-client
// limit is refused with 429 and Retry-After, and gets no ticket.
func TestClientOverLimitGets429(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	room.TotalActiveUsers = 1000
	room.ClientLimit = usher.ClientLimit{NewVisitorsPerMinute: 3, OverLimit: "reject"}
	h := newHostileGate(t, nil, room)
	var last *http.Response
	for range 5 {
		resp, err := http.Get(h.url + "/x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		last = resp
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") != fmt.Sprint(gate.ClientLimitRetry) {
		t.Fatalf("the fifth new visit from one address in a minute: %d, Retry-After %q", last.StatusCode, last.Header.Get("Retry-After"))
	}
	for _, c := range last.Cookies() {
		if strings.HasPrefix(c.Name, "__usher_wr") {
			t.Fatal("a refused client got a ticket")
		}
	}
	if n := h.reached.Load(); n != 3 {
		t.Fatalf("the origin got %d requests, want the 3 within the limit", n)
	}
}

func trustedLoopback() []netip.Prefix {
	return []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
}

// TestSlowBodyAfterWaitingAnswer: a client told to wait that sends its
// body slowly does not hold the connection (issue 8, defect 10): the
// waiting answer comes at once and the connection is closed.
func TestSlowBodyAfterWaitingAnswer(t *testing.T) {
	h := newHostileGate(t, func(o *gate.Options) { o.RejectUnknownHosts = true }, fullRoom())
	h.raw(t, "GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n") // fills the room
	for _, head := range []string{
		"POST /drop/buy HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 100000\r\n\r\n",
		"POST /drop/buy HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 1000\r\n\r\n",
		"POST /drop/buy HTTP/1.1\r\nHost: shop.example\r\nTransfer-Encoding: chunked\r\n\r\n",
		"POST /__usher/status/drop HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 1000\r\n\r\n",
		"POST /drop/buy HTTP/1.1\r\nHost: elsewhere\r\nContent-Length: 1000\r\n\r\n",
	} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(conn, head+"abc")
		start := time.Now()
		conn.SetDeadline(start.Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q: no answer: %v", head, err)
		}
		io.Copy(io.Discard, resp.Body)
		// The server closes the connection: a read ends at once, not when
		// the client's body would be done.
		var one [1]byte
		_, err = conn.Read(one[:])
		if err == nil || time.Since(start) > 3*time.Second {
			t.Fatalf("%q: the connection stayed open (%v after %v)", head, err, time.Since(start))
		}
		conn.Close()
	}
	if h.reached.Load() != 1 {
		t.Fatal("a slow body reached the origin")
	}
}
