package bench

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestRunThroughGate runs 10 visitors through a fake gate that admits the
// first 3 at once and the rest from 2 s on.
func TestRunThroughGate(t *testing.T) {
	t.Parallel()
	origin := NewOrigin("shop")
	gate := newFakeGate(origin, 3, 2*time.Second)
	srv := httptest.NewServer(gate)
	defer srv.Close()

	tl, err := Run(t.Context(), Config{
		Target:   srv.URL + "/sale",
		Arrivals: mustArrivals(t, "steady:10@500ms"),
		Model:    VisitorModel{Browse: Fixed(time.Second), RequestEvery: Fixed(300 * time.Millisecond)},
		Seed:     1,
		Horizon:  15 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	gate.mu.Lock()
	badReqs := gate.badReqs
	gate.mu.Unlock()
	if tl.Horizon || len(tl.Visitors) != 10 || badReqs != 0 {
		t.Fatalf("horizon %v, %d visitors, %d requests without bench headers", tl.Horizon, len(tl.Visitors), badReqs)
	}
	opened := gate.start.Add(2 * time.Second)
	snap := origin.Snapshot()
	atOnce := 0
	for i, v := range tl.Visitors {
		if want := "v" + string(rune('0'+(i+1)/10)) + string(rune('0'+(i+1)%10)); v.ID != want {
			t.Errorf("visitor %d ID = %q, want %q", i, v.ID, want)
		}
		if v.Admitted.IsZero() || v.Left.IsZero() || len(v.Errors) != 0 || v.Requeued != 0 || !v.Abandoned.IsZero() {
			t.Errorf("%s: %+v", v.ID, v)
			continue
		}
		if v.Arrival.After(v.ArrivalAck) || v.AdmittedSent.After(v.Admitted) || v.Arrival.Sub(tl.Start) < v.Scheduled {
			t.Errorf("%s: times out of order: %+v", v.ID, v)
		}
		// Admitted for 1 s: the admitting request and one every 300 ms.
		if n := len(v.Requests); n < 3 || n > 4 {
			t.Errorf("%s made %d requests while admitted, want 3 or 4", v.ID, n)
		}
		if got := snap[v.ID]; len(got) != len(v.Requests) {
			t.Errorf("%s: origin saw %d requests, visitor counted %d", v.ID, len(got), len(v.Requests))
		}
		if left := v.Left.Sub(v.Admitted); left < time.Second-50*time.Millisecond || left > 1500*time.Millisecond {
			t.Errorf("%s left %v after admission, want about 1s", v.ID, left)
		}
		// The gate admits the first three requests it sees: the first
		// visitors to arrive, though on a loaded machine two arrivals 50 ms
		// apart may reach it in either order.
		if len(v.CheckIns) == 0 {
			atOnce++
			if i > 4 {
				t.Errorf("%s, arriving %d-th, admitted at once", v.ID, i+1)
			}
			continue
		}
		if len(v.CheckIns) < 2 || v.Admitted.Before(opened) {
			t.Errorf("%s: %d check-ins, admitted at %v, want 2 or more and after %v", v.ID, len(v.CheckIns), v.Admitted, opened)
		}
		for k, c := range v.CheckIns {
			if c.Position != 4 || c.Ahead != 3 || !c.ETAKnown || c.ETA != time.Minute || c.Refresh != time.Second {
				t.Errorf("%s check-in %d = %+v", v.ID, k, c)
			}
			next := v.AdmittedSent
			if k+1 < len(v.CheckIns) {
				next = v.CheckIns[k+1].Sent
			}
			if gap := next.Sub(c.At); gap < time.Second || gap > 1300*time.Millisecond {
				t.Errorf("%s came back %v after check-in %d, want 1s", v.ID, gap, k)
			}
		}
	}
	res := Report(tl, Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: 5 * time.Second, RefreshInterval: time.Second})
	if res.Admitted != 10 || res.Errors != 0 || res.Unfinished != 0 || res.MaxRate != 10 || res.WaitP50S < 1 {
		t.Errorf("Report = %+v", res)
	}
	if atOnce != 3 {
		t.Errorf("%d visitors admitted at once, want the gate's 3", atOnce)
	}
}

func TestRunAbandon(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newFakeGate(NewOrigin(""), 0, -1))
	defer srv.Close()
	tl, err := Run(t.Context(), Config{
		Target:   srv.URL,
		Arrivals: ArrivalsAt(0, 50*time.Millisecond),
		Model:    VisitorModel{AbandonFraction: 1, Patience: Fixed(1500 * time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range tl.Visitors {
		// Check-ins at 0 and 1 s; the next would be at 2 s, after the
		// patience runs out at 1.5 s.
		waited := v.Abandoned.Sub(v.Arrival)
		if len(v.CheckIns) != 2 || !v.Admitted.IsZero() || waited < 1450*time.Millisecond || waited > 1800*time.Millisecond || !v.Left.Equal(v.Abandoned) {
			t.Errorf("%s: %d check-ins, abandoned after %v: %+v", v.ID, len(v.CheckIns), waited, v)
		}
	}
	if res := Report(tl, Limits{TotalActiveUsers: 1, SessionDuration: time.Second}); res.Abandoned != 2 || res.Admitted != 0 {
		t.Errorf("Report = %+v", res)
	}
}

// TestRunRequeue: a visitor told to wait while browsing waits in line
// again, checking in as told, and browses on once admitted again, until its
// browsing time is over; the report counts its two sessions apart.
func TestRunRequeue(t *testing.T) {
	t.Parallel()
	// Admitted at once; its second request is told to wait; its check-in
	// a second later is admitted again (the gate is open from 500 ms on).
	gate := newFakeGate(NewOrigin(""), 1, 500*time.Millisecond)
	gate.requeueOn = 2
	srv := httptest.NewServer(gate)
	defer srv.Close()
	tl, err := Run(t.Context(), Config{
		Target:   srv.URL,
		Arrivals: ArrivalsAt(0),
		Model:    VisitorModel{Browse: Fixed(2 * time.Second), RequestEvery: Fixed(50 * time.Millisecond)},
	})
	if err != nil {
		t.Fatal(err)
	}
	v := tl.Visitors[0]
	if v.Requeued != 1 || v.RequeuedAt.IsZero() || len(v.Requeues) != 1 || len(v.Requests) < 3 || len(v.RequestAcks) != len(v.Requests) {
		t.Fatalf("visitor = %+v", v)
	}
	back := v.Requests[1] // the first request after the requeue
	if d := back.Sub(v.RequeuedAt); d < 900*time.Millisecond || d > 1500*time.Millisecond {
		t.Errorf("back in %v after the requeue, want the 1 s refresh", d)
	}
	if d := v.Left.Sub(v.Admitted); d < 1900*time.Millisecond || d > 2500*time.Millisecond {
		t.Errorf("left %v after its admission, want its 2 s of browsing", d)
	}
	res := Report(tl, Limits{TotalActiveUsers: 1, NewUsersPerMinute: 10, SessionDuration: time.Minute})
	if res.RequeuedWhileBrowsing != 1 {
		t.Errorf("RequeuedWhileBrowsing = %d, want 1", res.RequeuedWhileBrowsing)
	}
	// The first session ends at the requeue, the second starts at the
	// answer that admitted it again: never two at once, two admissions.
	if res.MaxActive != 1 || res.MaxRate != 2 {
		t.Errorf("MaxActive %d, MaxRate %d, want 1 and 2", res.MaxActive, res.MaxRate)
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "http://" + closed.Addr().String()
	closed.Close()

	handler := func(status int, ctype, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	cases := []struct {
		name, target, key string
	}{
		{"server error", handler(502, "text/plain", "bad gateway"), "status_502"},
		{"html waiting page", handler(200, "text/html", "<p>please wait"), ErrUnexpected},
		{"broken json", handler(200, "application/json", `{"usherWaitingRoom": `), ErrBadJSON},
		{"json without refresh", handler(200, "application/json", `{"usherWaitingRoom":{"inWaitingRoom":true}}`), ErrBadJSON},
		{"json error at 429", handler(429, "application/json", `{"error":"slow down"}`), "status_429"},
		{"refused", deadURL, ErrTransport},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tl, err := Run(t.Context(), Config{
				Target: c.target, Arrivals: ArrivalsAt(0, 0),
				MaxErrors: 3, RetryDelay: 10 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range tl.Visitors {
				if !v.GaveUp || v.Left.IsZero() || len(v.Errors) != 3 {
					t.Errorf("%s: %+v", v.ID, v)
				}
			}
			if counts := tl.ErrorCounts(); counts[c.key] != 6 || len(counts) != 1 {
				t.Errorf("ErrorCounts = %v, want %s: 6", counts, c.key)
			}
		})
	}
}

func TestRunWaitingAt503(t *testing.T) {
	t.Parallel()
	// A room with queueing_status_code 503 still sends a JSON waiting
	// answer: a check-in, not an error. Its pre-queue flag is recorded.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(503)
		_, _ = w.Write([]byte(`{"usherWaitingRoom":{"inWaitingRoom":true,"refreshIntervalSeconds":1,"position":1,"isEventPrequeueing":true}}`))
	}))
	defer srv.Close()
	tl, err := Run(t.Context(), Config{Target: srv.URL, Arrivals: ArrivalsAt(0), Horizon: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	v := tl.Visitors[0]
	if !tl.Horizon || len(v.CheckIns) != 1 || !v.CheckIns[0].Prequeue || len(v.Errors) != 0 || !v.Left.IsZero() {
		t.Errorf("horizon %v, visitor %+v", tl.Horizon, v)
	}
	if res := Report(tl, Limits{TotalActiveUsers: 1, SessionDuration: time.Second}); res.Unfinished != 1 {
		t.Errorf("Unfinished = %d, want 1", res.Unfinished)
	}
}

func TestRunCancelled(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(newFakeGate(NewOrigin(""), 0, -1))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	tl, err := Run(ctx, Config{Target: srv.URL, Arrivals: ArrivalsAt(0, time.Hour)})
	if !errors.Is(err, context.DeadlineExceeded) || tl == nil || !tl.Horizon {
		t.Fatalf("Run = %v, %v", tl, err)
	}
	if v := tl.Visitors[1]; !v.Arrival.IsZero() {
		t.Errorf("visitor due in an hour arrived: %+v", v)
	}
}

func TestRunBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		err string
	}{
		{Config{Arrivals: ArrivalsAt(0)}, `bench: target "": want an http:// or https:// URL`},
		{Config{Target: "ftp://x/", Arrivals: ArrivalsAt(0)}, `bench: target "ftp://x/": want an http:// or https:// URL`},
		{Config{Target: "http://x/"}, "bench: no arrivals"},
		{Config{Target: "http://x/", Arrivals: ArrivalsAt(0), Model: VisitorModel{AbandonFraction: 1.5}},
			"bench: visitor model: abandon fraction 1.5 is not between 0 and 1"},
	} {
		if _, err := Run(t.Context(), c.cfg); err == nil || err.Error() != c.err {
			t.Errorf("Run error = %v, want %s", err, c.err)
		}
	}
}

func mustArrivals(tb testing.TB, spec string) Arrivals {
	tb.Helper()
	a, err := ParseArrivals(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}
