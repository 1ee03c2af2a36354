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

// TestSamplePercentile: a sample's percentile leaves out the slowest
// answer when they are too few for the percentile to leave any out (the
// p99 of fewer than 100), so that one slow answer among a second's few
// does not make a degraded second; two do, and a second whose answers are
// all slow shows at once; with 100 answers or more it is the percentile.
func TestSamplePercentile(t *testing.T) {
	sec := func(lats ...time.Duration) *Snapshot {
		var r Recorder
		for _, l := range lats {
			r.Record(l, false)
		}
		s := r.Snapshot()
		return &s
	}
	many := func(n int, l time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = l
		}
		return out
	}
	fast, slow := 100*time.Millisecond, 2*time.Second
	near := func(got, want time.Duration) bool { return got >= want && got <= want*9/8 }
	for _, tc := range []struct {
		name string
		s    *Snapshot
		p    float64
		want time.Duration
	}{
		{"none", sec(), 99, 0},
		{"one answer", sec(slow), 99, slow},
		{"one slow among 20", sec(append(many(19, fast), slow)...), 99, fast},
		{"two slow among 20", sec(append(many(18, fast), slow, slow)...), 99, slow},
		{"all slow", sec(many(20, slow)...), 99, slow},
		{"one slow among 200: the p99", sec(append(many(199, fast), slow)...), 99, fast},
		{"three slow among 200: the p99", sec(append(many(197, fast), slow, slow, slow)...), 99, slow},
		{"the median is the median", sec(append(many(10, fast), many(9, slow)...)...), 50, fast},
	} {
		if got := tc.s.SamplePercentile(tc.p); !(got == tc.want || (tc.want > 0 && near(got, tc.want))) {
			t.Errorf("%s: p%v %v, want about %v", tc.name, tc.p, got, tc.want)
		}
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
