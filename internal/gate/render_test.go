package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

func TestWaitingPage(t *testing.T) {
	tests := []struct {
		name       string
		statusCode int
		wantStatus int
	}{
		{"default status", 0, 200},
		{"429", http.StatusTooManyRequests, http.StatusTooManyRequests},
		{"202", http.StatusAccepted, http.StatusAccepted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newOrigin(t)
			room := testRoom("sale", "/sale", o.URL)
			room.Name = "Spring Sale"
			room.QueueingStatusCode = tt.statusCode
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: &fakeDecider{DecideFn: decide(waiting(12))}})
			r := httptest.NewRequest("GET", "/sale", nil)
			r.Header.Set("Accept", "application/json") // JSON is not enabled in this room
			w := serve(g, r)
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", w.Code, tt.wantStatus)
			}
			body := w.Body.String()
			for _, want := range []string{
				"Spring Sale", "You are number 12 in line", "11 people are ahead of you", "about 3 minutes",
				`<meta http-equiv="refresh" content="20">`, `datetime="2026-03-14T15:09:26Z"`,
			} {
				if !strings.Contains(body, want) {
					t.Errorf("page lacks %q", want)
				}
			}
			h := w.Header()
			if h.Get("Cache-Control") != "no-store" || h.Get("Refresh") != "20" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
				t.Errorf("headers = %v", h)
			}
			if (tt.wantStatus == 429) != (h.Get("Retry-After") == "20") {
				t.Errorf("Retry-After = %q", h.Get("Retry-After"))
			}
			if setCookie(w, "__usher_wr") == nil {
				t.Error("waiter got no ticket")
			}
			if len(o.requests()) != 0 {
				t.Error("a waiter reached the origin")
			}
		})
	}
}

func TestWaitingJSON(t *testing.T) {
	fifo := waiting(12)
	random := waiting(3)
	random.WaitKnown = false
	random.EstimatedWait = 0
	random.QueueAll = true
	random.RefreshAfter = 0
	ranged := waiting(7)
	ranged.WaitLow, ranged.EstimatedWait, ranged.WaitHigh = 250*time.Second, 9*time.Minute, 14*time.Minute
	prequeue := waiting(5)
	prequeue.Phase = usher.Prequeue
	prequeue.Event = &usher.Event{Name: "Spring drop", PrequeueStart: testNow.Add(-time.Hour),
		Start: testNow.Add(90*time.Second + 500*time.Millisecond), End: testNow.Add(2 * time.Hour)}
	prequeue.EstimatedWait = prequeue.Event.Start.Sub(testNow)
	unnamed := prequeue
	unnamed.Event = &usher.Event{PrequeueStart: testNow.Add(-time.Hour), Start: testNow.Add(3 * time.Second), End: testNow.Add(time.Hour)}
	unnamed.EstimatedWait = 3 * time.Second
	tests := []struct {
		name   string
		method usher.QueueingMethod
		d      usher.Decision
	}{
		{"waiting_fifo.json", "", fifo},
		{"waiting_random_unknown.json", usher.Random, random},
		{"waiting_random_range.json", usher.Random, ranged},
		{"waiting_prequeue.json", "", prequeue},
		{"waiting_prequeue_unnamed.json", "", unnamed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			room := testRoom("sale", "/sale", "http://origin.invalid")
			room.JSONResponseEnabled = true
			room.QueueingMethod = tt.method
			g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: &fakeDecider{DecideFn: decide(tt.d)}})
			r := httptest.NewRequest("GET", "/sale/api", nil)
			r.Header.Set("Accept", "application/json, text/plain, */*")
			w := serve(g, r)
			if w.Code != 200 || w.Header().Get("Content-Type") != "application/json" || w.Header().Get("Cache-Control") != "no-store" {
				t.Errorf("got %d %v", w.Code, w.Header())
			}
			if setCookie(w, "__usher_wr") == nil {
				t.Error("no ticket cookie with JSON")
			}
			var pretty bytes.Buffer
			if err := json.Indent(&pretty, w.Body.Bytes(), "", "  "); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, pretty.Bytes())
		})
	}
	t.Run("html when not asked", func(t *testing.T) {
		room := testRoom("sale", "/sale", "http://origin.invalid")
		room.JSONResponseEnabled = true
		g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: &fakeDecider{DecideFn: decide(fifo)}})
		r := httptest.NewRequest("GET", "/sale", nil)
		r.Header.Set("Accept", "text/html,*/*;q=0.8")
		w := serve(g, r)
		if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") || w.Header().Get("Vary") != "Accept" {
			t.Errorf("headers %v", w.Header())
		}
	})
}

func TestRejectPage(t *testing.T) {
	o := newOrigin(t)
	room := testRoom("sale", "/sale", o.URL)
	room.QueueingMethod = usher.Reject
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Decider: &fakeDecider{DecideFn: decide(usher.Decision{Outcome: usher.Turn})}})
	w := serve(g, httptest.NewRequest("GET", "/sale", nil))
	if w.Code != 200 || !strings.Contains(w.Body.String(), "not letting visitors in") || w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("got %d %v\n%s", w.Code, w.Header(), w.Body.String())
	}
	if strings.Contains(w.Body.String(), `http-equiv="refresh"`) || setCookie(w, "__usher_wr") != nil || len(o.requests()) != 0 {
		t.Error("reject page refreshes, sets a ticket, or reached the origin")
	}
}

func TestDecideError(t *testing.T) {
	o := newOrigin(t)
	cause := errors.New("redis: connection refused")
	g, logs := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)},
		Decider: &fakeDecider{DecideFn: func(context.Context, *usher.Room, *usher.Ticket, time.Time) (usher.Decision, error) {
			return usher.Decision{}, cause
		}}})
	h := server.RequestID(nil, g)
	for _, accept := range []string{"text/html", "application/json"} {
		r := httptest.NewRequest("GET", "/sale", nil)
		r.Header.Set("Accept", accept)
		w := serve(h, r)
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: got %d, Retry-After %q", accept, w.Code, w.Header().Get("Retry-After"))
		}
		if !strings.Contains(strings.ToLower(w.Body.String()), "the waiting room is unavailable, retry in a moment") {
			t.Errorf("%s: body %q", accept, w.Body.String())
		}
		if strings.Contains(w.Body.String(), "redis") {
			t.Error("cause leaked to the visitor")
		}
		id := w.Header().Get(server.RequestIDHeader)
		if !strings.Contains(logs.String(), id) || !strings.Contains(logs.String(), "redis: connection refused") {
			t.Errorf("log lacks request id %q or cause: %s", id, logs.String())
		}
	}
	if len(o.requests()) != 0 {
		t.Error("failed decision reached the origin")
	}
	_, _, err := g.Evaluate(httptest.NewRequest("GET", "/sale", nil))
	if !errors.Is(err, cause) || usher.ErrorCode(err) != usher.EUnavailable {
		t.Errorf("Evaluate error = %v (code %s)", err, usher.ErrorCode(err))
	}
}

func TestObserve(t *testing.T) {
	type obs struct {
		room string
		o    usher.Outcome
	}
	var got []obs
	o := newOrigin(t)
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/sale", o.URL)}, DefaultOrigin: o.URL,
		Observe: func(room string, out usher.Outcome, d time.Duration) {
			if d < 0 {
				t.Errorf("negative latency %v", d)
			}
			got = append(got, obs{room, out})
		}})
	serve(g, httptest.NewRequest("GET", "/sale", nil))
	serve(g, httptest.NewRequest("GET", "/elsewhere", nil))
	if len(got) != 1 || got[0] != (obs{"sale", usher.Admit}) {
		t.Errorf("observed %v", got)
	}
}

func TestEvaluate(t *testing.T) {
	room := testRoom("sale", "/sale", "http://origin.invalid")
	var gotNow time.Time
	g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Trusted: trusted(),
		Decider: &fakeDecider{DecideFn: func(_ context.Context, _ *usher.Room, _ *usher.Ticket, now time.Time) (usher.Decision, error) {
			gotNow = now
			return waiting(4), nil
		}}})
	r := httptest.NewRequest("GET", "/x/../SALE/a", nil)
	r.RemoteAddr = "10.0.0.3:1"
	r.Header.Set("X-Forwarded-For", "198.51.100.9")
	r.Header.Set("X-Forwarded-Proto", "https")
	m, d, err := g.Evaluate(r)
	if err != nil || m.Room != room || m.Path != "/SALE/a" || m.Scheme != "https" || m.ClientIP.String() != "198.51.100.9" ||
		!m.At.Equal(testNow) || !gotNow.Equal(testNow) || d.Outcome != usher.Wait {
		t.Errorf("Evaluate = %+v, %+v, %v", m, d, err)
	}
	m, d, err = g.Evaluate(httptest.NewRequest("GET", "/other", nil))
	if err != nil || m.Room != nil || d.Outcome != usher.Pass {
		t.Errorf("unmatched: %+v %+v %v", m, d, err)
	}
}
