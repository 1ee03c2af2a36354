package autopilot_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestSharedFigureAcrossNodes: three nodes, each with its own pilot and
// its own connection to one real redis-server, pool their samples and
// hold one figure: the same effective limits on every node from the first
// second, the same lower figure after the origin degrades (one node's
// decision, the others adopt it), and the same again as it recovers.
func TestSharedFigureAcrossNodes(t *testing.T) {
	srv := redistest.StartServer(t)
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 1000, NewUsersPerMinute: 600,
		Autopilot: usher.Autopilot{Enabled: true, Concurrency: true}}}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type node struct {
		p   *autopilot.Pilot
		rec *autopilot.Recorder
	}
	var nodes []node
	var changes int
	for range 3 {
		st, err := redis.Open(context.Background(), redis.Options{Addrs: []string{srv.Addr()}, Timeout: 5 * time.Second,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		p := &autopilot.Pilot{Shared: st, Logger: slog.New(slog.DiscardHandler), OnChange: func(string, autopilot.Change) { changes++ }}
		p.Status = func(_ context.Context, r *usher.Room, _ time.Time) (usher.RoomStats, error) {
			s := r.Settings
			p.Limit(r.ID, &s)
			// The room uses its limits to the full, people waiting.
			return usher.RoomStats{Waiting: 100, Active: int64(s.TotalActiveUsers), AdmittedLastMinute: int64(s.NewUsersPerMinute)}, nil
		}
		p.SetRooms([]*usher.Room{room}, t0)
		rec := p.Recorder(room.ID)
		if rec == nil {
			t.Fatal("no recorder for a governed room")
		}
		nodes = append(nodes, node{p, rec})
	}
	limits := func() [3][2]int {
		var out [3][2]int
		for i, n := range nodes {
			s := room.Settings
			n.p.Limit(room.ID, &s)
			out[i] = [2]int{s.NewUsersPerMinute, s.TotalActiveUsers}
		}
		return out
	}
	same := func(when string) [2]int {
		t.Helper()
		l := limits()
		if l[0] != l[1] || l[1] != l[2] {
			t.Fatalf("%s: the nodes' limits differ: %v", when, l)
		}
		return l[0]
	}
	ctx := context.Background()
	sec := 0
	run := func(seconds int, latency time.Duration) {
		t.Helper()
		for range seconds {
			sec++
			for i, n := range nodes {
				// Each node sees its own share of the traffic.
				for range 20 + 10*i {
					n.rec.Record(latency, false)
				}
			}
			now := t0.Add(time.Duration(sec) * time.Second)
			for _, n := range nodes {
				n.p.Tick(ctx, now)
			}
			// Between ticks each node takes the room's figure (Run does
			// every SyncEvery): a change made by a node that ticked later
			// in the round is then in force everywhere.
			for _, n := range nodes {
				n.p.Sync(ctx)
			}
			same("second " + time.Duration(sec*int(time.Second)).String())
		}
	}
	run(30, 50*time.Millisecond)
	healthy := same("healthy")
	before := changes
	run(5, 400*time.Millisecond)
	low := same("degraded")
	if low[0] >= healthy[0] || low[1] >= healthy[1] {
		t.Fatalf("after 5 degraded seconds: %v, want below %v", low, healthy)
	}
	if n := changes - before; n != 1 {
		t.Errorf("%d decisions across the nodes for one degradation, want 1 (one node's, adopted by the others)", n)
	}
	run(300, 50*time.Millisecond)
	if back := same("recovered"); back[0] <= low[0] {
		t.Errorf("after 5 healthy minutes: %v, want above %v", back, low)
	}
	st, _ := nodes[0].p.State(room.ID)
	if st.Learning {
		t.Error("the pooled baseline was never learned")
	}
}
