package bench

import (
	"testing"
	"time"
)

// TestLoadFlushes: a flush slot's moves are spread evenly over the nodes,
// and each node's batch is cut at the batch size.
func TestLoadFlushes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		moves        int64
		nodes, batch int
		want         int64
	}{
		{0, 1, 512, 0}, {1, 1, 512, 1}, {512, 1, 512, 1}, {513, 1, 512, 2},
		{2, 3, 512, 2}, {5, 3, 512, 3}, {1536, 3, 512, 3}, {1537, 3, 512, 4}, {3000, 2, 512, 6},
	} {
		if got := flushes(c.moves, c.nodes, c.batch); got != c.want {
			t.Errorf("flushes(%d moves, %d nodes, batch %d) = %d, want %d", c.moves, c.nodes, c.batch, got, c.want)
		}
	}
}

// TestLoadShards: moves counted by hand in a few slots, on a front and
// three back shards, two nodes: the flushes, view reads and CPU each shard
// gets.
func TestLoadShards(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newLoadCounter(LoadModel{Nodes: 2, Shards: 4, ScriptCost: 50 * time.Microsecond, MoveCost: 10 * time.Microsecond}, start, time.Minute)
	// Second 0: 3 new visitors and 600 moves of one bucket in one slot;
	// second 1: 1 move of another bucket; second 2: a renewal.
	for range 3 {
		c.call(start, loadNew)
	}
	b0, b1 := int64(1000), int64(1001)
	for b1 = 1001; c.shardOf(b1) == c.shardOf(b0); b1++ {
	}
	for range 600 {
		c.move(start.Add(50*time.Millisecond), b0)
	}
	c.move(start.Add(1500*time.Millisecond), b1)
	c.call(start.Add(2*time.Second), loadRenew)
	st := c.stats()
	// 600 moves over 2 nodes: 300 each, one flush each; 1 move: one flush.
	// Views: 2 nodes x 4 shards in seconds 0 and 1.
	if st.Seconds != 3 || st.CheckIns != 601 || st.FarBack != 601 || st.Flushes != 3 || st.Views != 16 || st.Calls != 3+1+3+16 {
		t.Fatalf("%+v", st)
	}
	s0, s1 := 1+c.shardOf(b0), 1+c.shardOf(b1)
	for k, sh := range st.ByShard {
		calls := 4.0 / 3 // its view reads, 2 a second in 2 of 3 seconds
		moves := 0.0
		switch k {
		case 0:
			calls += 4.0 / 3 // 3 new visitors and a renewal
		case s0:
			calls += 2.0 / 3 // a flush per node
			moves = 600
		case s1:
			calls += 1.0 / 3
			moves = 1
		}
		cpu := (calls*3*50e-6 + moves*10e-6) / 3
		if d := sh.Calls.Mean - calls; d > 1e-9 || d < -1e-9 {
			t.Errorf("shard %d: %.4f calls a second, want %.4f", k, sh.Calls.Mean, calls)
		}
		if d := sh.CPU.Mean - cpu; d > 1e-9 || d < -1e-9 {
			t.Errorf("shard %d: %.6f of a core, want %.6f", k, sh.CPU.Mean, cpu)
		}
	}
	if r := st.ByShard[s0]; r.CPU.Peak != 4*50e-6+600*10e-6 || r.CPU.PeakAtS != 0 {
		t.Errorf("shard %d: CPU peak %v at %d s", s0, r.CPU.Peak, r.CPU.PeakAtS)
	}
}
