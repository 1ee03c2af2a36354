package autopilot

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestPace: the rate window may grow by a second's share of the rate a
// tick (at least one), never past the rate; an allowance left unused
// carries over up to a refresh interval's shares (at least 2 s).
func TestPace(t *testing.T) {
	for _, tc := range []struct {
		name         string
		prev, window int64
		rate         int
		refresh      time.Duration
		want         int64
	}{
		{"an empty window: a second's share", -1, 0, 600, 10 * time.Second, 10},
		{"half used: the window plus a share", 300, 300, 600, 10 * time.Second, 310},
		{"never above the rate", 600, 595, 600, 10 * time.Second, 600},
		{"a window above a lowered rate: the rate", 900, 900, 600, 10 * time.Second, 600},
		{"under 60 a minute: one a second", -1, 0, 30, 10 * time.Second, 1},
		{"a share rounds up", 10, 10, 90, 10 * time.Second, 12},
		{"unused carries over", 20, 10, 600, 10 * time.Second, 30},
		{"up to a refresh interval's shares", 200, 10, 600, 10 * time.Second, 110},
		{"at least 2 s of shares", 200, 10, 600, 0, 30},
		{"a window that fell: a share above it", 100, 50, 600, 10 * time.Second, 110},
	} {
		if got := pace(tc.prev, tc.window, tc.rate, tc.refresh); got != tc.want {
			t.Errorf("%s: pace(%d, %d, %d, %v) = %d, want %d", tc.name, tc.prev, tc.window, tc.rate, tc.refresh, got, tc.want)
		}
	}
	// A long line whose front takes every slot: the first minute's
	// admissions are spread over it, a second's share a second.
	allow, window := int64(-1), int64(0)
	for range 30 {
		allow = pace(allow, window, 600, 10*time.Second)
		window = allow
	}
	if window != 300 {
		t.Errorf("after 30 paced seconds the window holds %d, want 300", window)
	}
	// A front that checks in only every 5 s: the allowance carries over,
	// so the pace holds.
	allow, window = -1, 0
	for sec := range 60 {
		allow = pace(allow, window, 600, 10*time.Second)
		if sec%5 == 4 {
			window = allow
		}
	}
	if window < 550 {
		t.Errorf("with check-ins every 5 s the window holds %d after a minute, want about 600", window)
	}
}

// TestPooledLatency: a sample's percentile is taken over its second and,
// while they hold fewer than PoolAnswers answers, the seconds before (at
// most PoolSeconds in all): one slow answer among a few in a second does
// not make the second's p99; a second whose answers are all slow still
// shows at once; the pool never holds more than PoolSeconds seconds.
func TestPooledLatency(t *testing.T) {
	sec := func(n int, lat time.Duration) Snapshot {
		var r Recorder
		for range n {
			r.Record(lat, false)
		}
		return r.Snapshot()
	}
	var e entry
	e.pooled(sec(40, 100*time.Millisecond))
	e.pooled(sec(40, 100*time.Millisecond))
	s := sec(19, 100*time.Millisecond)
	slow := sec(1, 2*time.Second)
	s.Add(&slow)
	if p := e.pooled(s).Percentile(99); p > 120*time.Millisecond {
		t.Errorf("one slow answer among 100 pooled: p99 %v, want about 100ms", p)
	}
	if p := e.pooled(sec(40, time.Second)).Percentile(99); p < 900*time.Millisecond {
		t.Errorf("a second of slow answers: p99 %v, want about 1s", p)
	}
	if p := e.pooled(sec(200, 50*time.Millisecond)).Percentile(99); p > 60*time.Millisecond {
		t.Errorf("a second with enough answers alone: p99 %v, want about 50ms", p)
	}
	if n := len(e.recent); n != PoolSeconds {
		t.Errorf("%d seconds kept, want %d", n, PoolSeconds)
	}
	if got := e.pooled(Snapshot{}); got.Count != 0 {
		t.Errorf("a second without answers pooled %d answers, want none (no traffic)", got.Count)
	}
}

// TestLimitPaced: a pilot gives the engine the paced rate after a tick
// that read the room's status, and the governed rate when it could not.
func TestLimitPaced(t *testing.T) {
	room := &usher.Room{ID: "sale", Settings: usher.Settings{NewUsersPerMinute: 600, TotalActiveUsers: 1000,
		RefreshInterval: 10 * time.Second, Autopilot: usher.Autopilot{Enabled: true, MaxNewUsersPerMinute: 1200}}}
	var fail bool
	p := &Pilot{Logger: slog.New(slog.DiscardHandler), Status: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) {
		if fail {
			return usher.RoomStats{}, errors.New("store down")
		}
		return usher.RoomStats{Waiting: 5000, AdmittedLastMinute: 40}, nil
	}}
	p.SetRooms([]*usher.Room{room}, t0)
	limit := func() int {
		s := room.Settings
		p.Limit(room.ID, &s)
		return s.NewUsersPerMinute
	}
	if got := limit(); got != 600 {
		t.Errorf("before a tick: %d, want the governed 600", got)
	}
	p.Tick(context.Background(), t0.Add(time.Second))
	if got := limit(); got != 50 {
		t.Errorf("after a tick with 40 in the window: %d, want 40 + 600/60", got)
	}
	fail = true
	p.Tick(context.Background(), t0.Add(2*time.Second))
	if got := limit(); got != 600 {
		t.Errorf("after a tick without the status: %d, want the governed 600", got)
	}
}
