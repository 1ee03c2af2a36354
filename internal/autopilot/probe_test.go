package autopilot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestProbeHealthURL: a room with a health URL is watched through probes,
// not the proxied answers (the gate gets no recorder for it); a probe
// answered 5xx, or slower than the probe timeout, is an error.
func TestProbeHealthURL(t *testing.T) {
	var status atomic.Int64
	status.Store(http.StatusOK)
	var slow atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			time.Sleep(300 * time.Millisecond)
		}
		w.WriteHeader(int(status.Load()))
	}))
	defer srv.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 100, NewUsersPerMinute: 60,
		Autopilot: usher.Autopilot{Enabled: true, HealthURL: srv.URL + "/health", ProbeInterval: 100 * time.Millisecond,
			ProbeTimeout: 100 * time.Millisecond}}}
	p := &Pilot{}
	p.SetRooms([]*usher.Room{room}, time.Now())
	if p.Recorder("sale") != nil {
		t.Fatal("the gate gets a recorder for a room watched through its health URL")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.probes(ctx, time.Now())
	rec := &p.load()["sale"].probed
	wait := func(what string, ok func(Snapshot) bool) Snapshot {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			s := rec.Snapshot()
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: after 10 s, %d probes, %d errors", what, s.Count, s.Errors)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	wait("healthy probes", func(s Snapshot) bool { return s.Count >= 3 && s.Errors == 0 })
	status.Store(http.StatusServiceUnavailable)
	before := rec.Snapshot()
	wait("503 probes", func(s Snapshot) bool { return s.Errors-before.Errors >= 2 })
	status.Store(http.StatusOK)
	slow.Store(true)
	before = rec.Snapshot()
	wait("timed-out probes", func(s Snapshot) bool { return s.Errors-before.Errors >= 2 })
	// Without the health URL the prober stops and the gate records.
	room2 := *room
	room2.Autopilot.HealthURL = ""
	p.SetRooms([]*usher.Room{&room2}, time.Now())
	p.probes(ctx, time.Now())
	if p.Recorder("sale") == nil {
		t.Fatal("no recorder for the gate once the health URL is gone")
	}
}
