package autopilot

import (
	"testing"
	"time"
)

// TestPaced: the engine gets the rate window plus a second's share of the
// governed rate (at least one), never more than the rate, and the rate
// itself when the window is unknown.
func TestPaced(t *testing.T) {
	for _, tc := range []struct {
		rate   int
		window int64
		want   int
	}{
		{600, 0, 10},    // an empty window: a second's share
		{600, 300, 310}, // half used: the window plus a share
		{600, 595, 600}, // never above the rate
		{600, 900, 600}, // a window above a lowered rate: the rate
		{30, 0, 1},      // under 60 a minute: one a second
		{90, 10, 12},    // a share rounds up
		{600, -1, 600},  // unknown: unpaced
		{1, 0, 1},       // the smallest rate
		{1_000_000, 0, 16667},
	} {
		if got := paced(tc.rate, tc.window); got != tc.want {
			t.Errorf("paced(%d, %d) = %d, want %d", tc.rate, tc.window, got, tc.want)
		}
	}
	// Paced second by second from an empty window with a long line, the
	// admissions of the first minute are spread over it.
	var window int64
	for range 30 {
		window = int64(paced(600, window))
	}
	if window != 300 {
		t.Errorf("after 30 paced seconds the window holds %d, want 300", window)
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
