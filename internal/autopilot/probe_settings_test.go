package autopilot

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/usherhq/usher"
)

// roundTripFunc answers a request without a network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestProberFollowsSettings: a running room's prober follows a change of
// its probe interval or probe timeout (as the admin API's room set and a
// reload make them, through SetRooms) at once, and an event's autopilot
// settings while the event runs, as the governor does. Before, it
// restarted only when the health URL changed: a change from 100 ms to
// 1 m still probed ten times a second.
func TestProberFollowsSettings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var probes atomic.Int64
		var slow atomic.Int64 // how long a probe takes
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			probes.Add(1)
			select {
			case <-time.After(time.Duration(slow.Load())):
			case <-r.Context().Done():
				return nil, r.Context().Err()
			}
			return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Header: http.Header{}, Request: r}, nil
		})}
		room := func(every, timeout time.Duration) *usher.Room {
			return &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 100, NewUsersPerMinute: 60,
				Autopilot: usher.Autopilot{Enabled: true, HealthURL: "http://origin.test/health",
					ProbeInterval: every, ProbeTimeout: timeout}}}
		}
		p := &Pilot{Client: client, Logger: slog.New(slog.DiscardHandler)}
		p.SetRooms([]*usher.Room{room(100*time.Millisecond, time.Second)}, time.Now())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { p.Run(ctx); close(done) }()
		// probesIn counts the probes sent in the next d.
		probesIn := func(d time.Duration) int64 {
			before := probes.Load()
			time.Sleep(d)
			synctest.Wait()
			return probes.Load() - before
		}
		set := func(r *usher.Room) {
			p.SetRooms([]*usher.Room{r}, time.Now())
			synctest.Wait()
		}
		if n := probesIn(time.Second); n != 10 {
			t.Errorf("every 100 ms: %d probes in a second, want 10", n)
		}
		set(room(time.Minute, time.Second))
		if n := probesIn(time.Second); n != 0 {
			t.Errorf("every minute: %d probes in the next second, want 0", n)
		}
		if n := probesIn(time.Minute); n != 1 {
			t.Errorf("every minute: %d probes in the next minute, want 1", n)
		}
		set(room(100*time.Millisecond, time.Second))
		if n := probesIn(time.Second); n != 10 {
			t.Errorf("back to 100 ms: %d probes in a second, want 10", n)
		}

		// A probe of 300 ms is fine under a 1 s timeout, an error under
		// a 200 ms one, from the change on.
		slow.Store(int64(300 * time.Millisecond))
		set(room(time.Second, time.Second))
		rec := &p.load()["sale"].probed
		before := rec.Snapshot()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		if s := rec.Snapshot(); s.Count-before.Count != 3 || s.Errors != before.Errors {
			t.Errorf("timeout 1 s: %d probes, %d errors, want 3 and 0", s.Count-before.Count, s.Errors-before.Errors)
		}
		set(room(time.Second, 200*time.Millisecond))
		before = rec.Snapshot()
		time.Sleep(3500 * time.Millisecond)
		synctest.Wait()
		if s := rec.Snapshot(); s.Count-before.Count != 3 || s.Errors-before.Errors != 3 {
			t.Errorf("timeout 200 ms: %d probes, %d errors, want 3 and 3", s.Count-before.Count, s.Errors-before.Errors)
		}
		slow.Store(0)

		// An event that probes every minute, from 2 s on: its settings
		// are in force from the tick after its start.
		ev := room(100*time.Millisecond, time.Second)
		evAuto := ev.Autopilot
		evAuto.ProbeInterval = time.Minute
		start := time.Now().Add(2 * time.Second)
		ev.Events = []usher.Event{{Name: "drop", Start: start, End: start.Add(time.Hour), Overrides: usher.Overrides{Autopilot: &evAuto}}}
		set(ev)
		if n := probesIn(time.Second); n != 10 {
			t.Errorf("before the event: %d probes in a second, want 10", n)
		}
		time.Sleep(time.Until(start) + time.Second)
		if n := probesIn(time.Second); n != 0 {
			t.Errorf("during the event (every minute): %d probes in a second, want 0", n)
		}
		cancel()
		<-done
	})
}

// TestEventHealthURLSamplesProbesAlone: a room watched through its proxied
// answers whose event brings a health URL is sampled from the probes alone
// while the event runs (the gate still records its answers, the governor
// does not read them then), and from the answers again after it.
func TestEventHealthURLSamplesProbesAlone(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 30, 0, time.UTC)
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 100, NewUsersPerMinute: 60,
		Autopilot: usher.Autopilot{Enabled: true}}}
	auto := usher.Autopilot{Enabled: true, HealthURL: "http://origin.test/health", ProbeInterval: time.Second}
	room.Events = []usher.Event{{Name: "drop", Start: now.Add(-time.Minute), End: now.Add(time.Minute), Overrides: usher.Overrides{Autopilot: &auto}}}
	p := &Pilot{Logger: slog.New(slog.DiscardHandler)}
	p.SetRooms([]*usher.Room{room}, now)
	rec := p.Recorder("sale")
	if rec == nil {
		t.Fatal("no recorder for the gate of a room watched through its answers")
	}
	probed := &p.load()["sale"].probed
	second := func(at time.Time, answers, probes time.Duration) time.Duration {
		for range 5 {
			rec.Record(answers, false)
			probed.Record(probes, false)
		}
		p.Tick(context.Background(), at)
		return p.States()["sale"].Latency
	}
	// During the event: the probes' 10 ms, not the answers' 2 s.
	if got := second(now, 2*time.Second, 10*time.Millisecond); got > 20*time.Millisecond {
		t.Errorf("during the event: sample latency %v, want the probes' 10 ms", got)
	}
	// After it: the answers again.
	if got := second(now.Add(2*time.Minute), 2*time.Second, 10*time.Millisecond); got < time.Second {
		t.Errorf("after the event: sample latency %v, want the answers' 2 s", got)
	}
}
