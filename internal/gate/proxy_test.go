package gate

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestAdmitProxies(t *testing.T) {
	o := newOrigin(t)
	room := testRoom("sale", "/sale", o.URL)
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Trusted: trusted()})

	r := httptest.NewRequest("GET", "/sale/item?id=7", nil)
	r.Host = "shop.example"
	r.Header.Set("Cookie", "a=1;__usher_wr=old-ticket; b=\"x y\"")
	r.Header.Add("Cookie", "__usher_wr=another")
	r.Header.Add("Cookie", "c=3")
	r.Header.Set("X-Usher-Admitted", "yes")
	r.Header.Set("x-usher-visitor", "forged")
	r.Header.Set("X-Forwarded-For", "6.6.6.6")
	r.Header.Set("X-Forwarded-Proto", "https")
	r.Header.Set("X-Forwarded-Host", "evil.example")
	r.Header.Set("X-Request-Id", "rid-1")
	w := serve(g, r)

	if w.Code != 200 || w.Body.String() != "origin /sale/item" {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
	reqs := o.requests()
	if len(reqs) != 1 {
		t.Fatalf("origin got %d requests", len(reqs))
	}
	got := reqs[0]
	if cookies := got.Header.Values("Cookie"); strings.Join(cookies, "|") != `a=1; b="x y"|c=3` {
		t.Errorf("origin cookies = %q", cookies)
	}
	for k := range got.Header {
		if strings.HasPrefix(strings.ToLower(k), "x-usher-") {
			t.Errorf("origin got %s", k)
		}
	}
	want := map[string]string{
		"X-Forwarded-For":   "203.0.113.7",
		"X-Forwarded-Proto": "http",
		"X-Forwarded-Host":  "shop.example",
		"X-Request-Id":      "rid-1",
	}
	for k, v := range want {
		if got.Header.Get(k) != v {
			t.Errorf("origin %s = %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if got.Host != strings.TrimPrefix(o.URL, "http://") {
		t.Errorf("origin Host = %q", got.Host)
	}
	// the ticket cookie and the origin's own cookie both reach the client
	if c := setCookie(w, "__usher_wr"); c == nil || c.Value == "" {
		t.Errorf("no ticket cookie: %v", w.Header().Values("Set-Cookie"))
	}
	if c := setCookie(w, "origin"); c == nil {
		t.Errorf("origin cookie lost: %v", w.Header().Values("Set-Cookie"))
	}
}

func TestAdmitWithoutChangeSetsNoCookie(t *testing.T) {
	o := newOrigin(t)
	d := admitNew()
	d.TicketChanged = false
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}, Decider: &fakeDecider{DecideFn: decide(d)}})
	w := serve(g, httptest.NewRequest("GET", "/sale", nil))
	if w.Code != 200 || setCookie(w, "__usher_wr") != nil {
		t.Errorf("got %d, Set-Cookie %v", w.Code, w.Header().Values("Set-Cookie"))
	}
}

func TestForwardedFromTrustedProxy(t *testing.T) {
	o := newOrigin(t)
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}, Trusted: trusted()})
	r := httptest.NewRequest("GET", "/sale", nil)
	r.RemoteAddr = "10.0.0.2:4444"
	r.Host = "internal:8080"
	r.Header.Set("X-Forwarded-For", "198.51.100.4")
	r.Header.Set("X-Forwarded-Proto", "https")
	r.Header.Set("X-Forwarded-Host", "shop.example")
	w := serve(g, r)
	if w.Code != 200 {
		t.Fatalf("status %d", w.Code)
	}
	h := o.requests()[0].Header
	if h.Get("X-Forwarded-For") != "198.51.100.4, 10.0.0.2" || h.Get("X-Forwarded-Proto") != "https" || h.Get("X-Forwarded-Host") != "shop.example" {
		t.Errorf("forwarded headers = %q %q %q", h.Get("X-Forwarded-For"), h.Get("X-Forwarded-Proto"), h.Get("X-Forwarded-Host"))
	}
}

func TestNoRoom(t *testing.T) {
	o := newOrigin(t)
	dec := &fakeDecider{}
	t.Run("default origin", func(t *testing.T) {
		g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}, DefaultOrigin: o.URL, Decider: dec})
		r := httptest.NewRequest("GET", "/about%2Fus?q=1", nil)
		r.Header.Set("Cookie", "__usher_wr=x; a=1")
		w := serve(g, r)
		if w.Code != 200 || setCookie(w, "__usher_wr") != nil {
			t.Fatalf("got %d %v", w.Code, w.Header())
		}
		got := o.requests()[0]
		if got.RawPath != "/about%2Fus" || got.Header.Get("Cookie") != "__usher_wr=x; a=1" {
			t.Errorf("origin saw %q cookie %q", got.RawPath, got.Header.Get("Cookie"))
		}
	})
	t.Run("no default origin", func(t *testing.T) {
		g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}, Decider: dec})
		if w := serve(g, httptest.NewRequest("GET", "/about", nil)); w.Code != 404 {
			t.Errorf("status %d, want 404", w.Code)
		}
	})
	if n := len(dec.calls()); n != 0 {
		t.Errorf("Decide called %d times", n)
	}
}

func TestSuspendedPassesThrough(t *testing.T) {
	o := newOrigin(t)
	room := testRoom("sale", "/sale", o.URL)
	room.Suspended = true
	dec := &fakeDecider{}
	var observed int
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: dec,
		Observe: func(string, usher.Outcome, time.Duration) { observed++ }})
	r := httptest.NewRequest("GET", "/sale", nil)
	r.Header.Set("Cookie", "__usher_wr=kept")
	w := serve(g, r)
	if w.Code != 200 || w.Body.String() != "origin /sale" {
		t.Fatalf("got %d %q", w.Code, w.Body.String())
	}
	if setCookie(w, "__usher_wr") != nil {
		t.Error("suspended room set a ticket cookie")
	}
	if len(dec.calls()) != 0 || observed != 0 {
		t.Errorf("Decide called %d times, observed %d", len(dec.calls()), observed)
	}
	if got := o.requests()[0].Header.Get("Cookie"); got != "__usher_wr=kept" {
		t.Errorf("origin cookie = %q", got)
	}
}

func TestDeadOrigin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	_ = ln.Close()
	g, logs := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", dead)}})
	r := httptest.NewRequest("GET", "/sale", nil)
	r.Header.Set("Accept", "text/html")
	w := serve(g, r)
	if w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "The site did not answer") {
		t.Errorf("got %d %q", w.Code, w.Body.String())
	}
	if setCookie(w, "__usher_wr") == nil {
		t.Error("an admitted visitor's ticket must survive a 502")
	}
	if !strings.Contains(logs.String(), "origin request failed") || !strings.Contains(logs.String(), `"room":"sale"`) {
		t.Errorf("logs = %s", logs.String())
	}
}

func TestEventStreamIsFlushed(t *testing.T) {
	release := make(chan struct{})
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer o.Close()
	defer close(release)
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}})
	front := httptest.NewServer(g)
	defer front.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", front.URL+"/sale/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "data: first\n" {
		t.Errorf("first event = %q, %v (not streamed?)", line, err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("event arrived only after the deadline")
	}
}
