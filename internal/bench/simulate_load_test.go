package bench_test

import (
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// loadCrowd is a line of 12 visitors arriving in 3 s at a room of 1 place
// and 1 admission a minute, checking in every 2 s (no adaptive intervals),
// so that the far-back margin is 2 (1 place and a minute of 1 admission:
// twice an interval of at most 5 s to its cell's expiry, and 2 s, is
// under a minute) and most check-ins are far back; each visitor browses
// 50 s, a request every 30 s, in sessions of a minute (renewed at the
// second request).
func loadCrowd(t *testing.T, m bench.LoadModel) (*bench.Timeline, *bench.LoadStats) {
	t.Helper()
	room := simRoom(1, 1, time.Minute, 2*time.Second)
	room.MaxRefreshInterval = 2 * time.Second
	cfg := bench.SimConfig{Room: room, Arrivals: arrivals(t, "steady:4/s@3s"),
		Model: bench.VisitorModel{Browse: bench.MustDist("50s"), RequestEvery: bench.MustDist("30s")},
		Seed:  7, Load: &m, Horizon: 2 * time.Hour}
	tl := simulate(t, cfg)
	if tl.Load == nil {
		t.Fatal("no load stats")
	}
	return tl, tl.Load
}

// byHand works out from the timeline alone what the load model must
// count: every waiting answer after a visitor's first is a check-in (and
// the one that admitted a waiter), far back when it had 2 or more ahead;
// each flush slot of 100 ms with far-back check-ins makes one flush per
// node that got one of them (min(moves, nodes)); every second with one
// makes a view read per node and shard.
type byHand struct {
	arrivals, checkIns, far, admissions, renewals int64
	// newFar counts the new visitors far back (their first answer a wait
	// with 2 or more ahead): moves, not calls.
	newFar              int64
	flushes, farSeconds int64
}

func countByHand(tl *bench.Timeline, nodes int) byHand {
	var h byHand
	slots := map[int64]int64{}
	secs := map[int64]bool{}
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		h.arrivals++
		if len(v.CheckIns) > 0 && !v.Admitted.IsZero() {
			h.checkIns++
			h.admissions++
		}
		for k, c := range v.CheckIns {
			if k == 0 {
				if c.Ahead >= 2 && v.Admitted != c.At {
					h.newFar++
					d := c.At.Sub(tl.Start)
					slots[int64(d/(100*time.Millisecond))]++
					secs[int64(d/time.Second)] = true
				}
				continue
			}
			h.checkIns++
			if c.Ahead >= 2 {
				h.far++
				d := c.At.Sub(tl.Start)
				slots[int64(d/(100*time.Millisecond))]++
				secs[int64(d/time.Second)] = true
			}
		}
		h.renewals += int64(max(len(v.Requests)-1, 0))
	}
	for _, m := range slots {
		h.flushes += min(m, int64(nodes))
	}
	h.farSeconds = int64(len(secs))
	return h
}

// TestSimulateLoadByHand: the load model's counts are what the timeline
// says, on one node and one shard and on three nodes and three shards.
func TestSimulateLoadByHand(t *testing.T) {
	t.Parallel()
	for _, m := range []bench.LoadModel{{Nodes: 1, Shards: 1}, {Nodes: 3, Shards: 2}} {
		tl, l := loadCrowd(t, m)
		h := countByHand(tl, m.Nodes)
		if h.far == 0 || h.checkIns == h.far {
			t.Fatalf("%+v: the crowd should have far-back and near check-ins: %+v", m, h)
		}
		views := h.farSeconds * int64(m.Nodes*m.Shards)
		got := [...]int64{l.NewVisitors + l.Admissions, l.CheckIns, l.FarBack, l.FarBackNew, l.Admissions, l.NearCheckIns, l.Renewals, l.Flushes, l.Views}
		want := [...]int64{h.arrivals - h.newFar + h.admissions, h.checkIns, h.far + h.newFar, h.newFar, h.admissions, h.checkIns - h.far - h.admissions, h.renewals, h.flushes, views}
		if got != want {
			t.Errorf("%+v: new+admissions, check-ins, far back, far-back new visitors, admissions, near check-ins, renewals, flushes, views = %v, by hand %v", m, got, want)
		}
		if calls := l.NewVisitors + l.Admissions + l.NearCheckIns + l.Renewals + l.Reads + l.Flushes + l.Views; l.Calls != calls {
			t.Errorf("%+v: %d calls, the kinds sum to %d", m, l.Calls, calls)
		}
		// Per shard: the front takes the scripts and its view reads, the
		// back the flushes and its view reads.
		script := l.NewVisitors + l.Admissions + l.NearCheckIns + l.Renewals + l.Reads
		sum := 0.0
		for _, s := range l.ByShard {
			sum += s.Calls.Mean * float64(l.Seconds)
		}
		if int64(sum+0.5) != l.Calls {
			t.Errorf("%+v: the shards' calls sum to %.1f, want %d", m, sum, l.Calls)
		}
		if m.Shards == 2 {
			front := l.ByShard[0].Calls.Mean * float64(l.Seconds)
			if want := script + views/2; int64(front+0.5) != want {
				t.Errorf("front shard: %.1f calls, want %d", front, want)
			}
		}
		t.Logf("%+v: %+v", m, h)
	}
}

// TestSimulateLoadAggregateSame: parking far-back waiters leaves the load
// model's counts as they are one by one (a parked check-in is far back
// by the Redis store's margin too, and counted at its time).
func TestSimulateLoadAggregateSame(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of 5,000 visitors")
	}
	t.Parallel()
	room := simRoom(100, 200, 3*time.Minute, 10*time.Second)
	cfg := bench.SimConfig{Room: room, Arrivals: arrivals(t, "flash:5000@1m"),
		Model: bench.VisitorModel{Browse: bench.MustDist("2m"), RequestEvery: bench.MustDist("30s"), AbandonFraction: 0.2, Patience: bench.MustDist("10m")},
		Seed:  5, Compact: true, Load: &bench.LoadModel{Nodes: 3, Shards: 4}}
	one := simulate(t, cfg)
	cfg.Aggregate = true
	agg := simulate(t, cfg)
	if agg.Aggregate.Skipped == 0 {
		t.Fatal("nothing parked")
	}
	a, b := *one.Load, *agg.Load
	if a.CheckIns != b.CheckIns || a.FarBack != b.FarBack || a.Calls != b.Calls || a.Flushes != b.Flushes || a.Views != b.Views ||
		a.NearCheckIns != b.NearCheckIns || a.Admissions != b.Admissions || a.Renewals != b.Renewals {
		t.Errorf("one by one %+v\naggregate %+v", a, b)
	}
	t.Logf("%d check-ins, %d far back, %d calls; %d parked check-ins", b.CheckIns, b.FarBack, b.Calls, agg.Aggregate.Skipped)
}
