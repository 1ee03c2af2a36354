package redis_test

import (
	"container/heap"
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// The far-back property test drives real admission engines on nodes
// sharing one real redis-server, on simulated time, with waiters far back
// in a long line answered from each node's view and their moves applied
// in batches late, in any order between nodes, or never (a node that dies
// before it flushes). What must hold whatever the batches do:
//
//   - never over a limit: active sessions (by the visitors' own record)
//     never above total_active_users, admissions in any minute never
//     above new_users_per_minute;
//   - no FIFO inversion among live waiters: no waiter is told to wait
//     after a visitor of a later bucket was admitted;
//   - nobody re-queued while browsing;
//   - with no batch lost, the store counts exactly the waiting tickets
//     whose cells have not expired, once every node has flushed.

type farVisitor struct {
	id        int
	arrive    time.Time
	patience  time.Duration
	browse    time.Duration
	ticket    *usher.Ticket
	admitted  time.Time
	sessions  [][2]time.Time
	lastWait  time.Time
	bucket    int64
	abandoned bool
	done      bool
	held      int // the node holding its check-in, plus one (0: none)
}

type farEvent struct {
	at   time.Time
	seq  int
	v    *farVisitor // nil: a node's flush, or its horizon step
	n    int         // the node flushing or stepping
	step bool        // a horizon step (a room spread over shards)
}

type farQueue []farEvent

func (q farQueue) Len() int { return len(q) }
func (q farQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q farQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *farQueue) Push(x any)   { *q = append(*q, x.(farEvent)) }
func (q *farQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

var debugFar = map[int]bool{}

type farConfig struct {
	seed     uint64
	nodes    int
	visitors int
	// lose is the chance that a node's flush is lost instead (the node
	// died: its moves and views gone).
	lose float64
	// maxLate is the longest a node waits between flushes.
	maxLate time.Duration
	// off answers every check-in with a call of its own (the reference).
	off bool
	// shards spreads the room over a front and shards-1 back shards; each
	// node steps the serving horizon every second.
	shards int
	// die is the chance, at each of a node's horizon steps, that the node
	// dies for 3 to 8 s: its pending moves and views lost, no flush, no
	// step (its horizon lease lapses), no visitor served.
	die float64
	// stall stops every node's horizon steps from stall[0] to stall[1]
	// after the start: the front drains to its horizon and must wait.
	stall [2]time.Duration
}

type farResult struct {
	checkIns, answered, lost int64
	inversions, requeued     int
	admitted, exact          int
	deaths, horizons         int
	backMoved, refused       int64
	// over is the most the store counted waiting beyond the live
	// waiting tickets at an exact check of a room spread over shards.
	over int64
}

func runFar(t *testing.T, srv *redistest.Server, cfg farConfig) farResult {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(cfg.seed, 11))
	start := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	now := start
	pfx := prefix(t)
	stores := make([]*redis.Store, cfg.nodes)
	engines := make([]*admission.Engine, cfg.nodes)
	for i := range stores {
		stores[i] = mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: pfx,
			FarBack: redis.FarBack{Manual: true, Off: cfg.off}})
		engines[i] = admission.New(stores[i], admission.Options{Rand: rng.Uint64, Now: func() time.Time { return now }})
	}
	room := usher.Room{ID: "line", Name: "Line", Settings: usher.Settings{
		TotalActiveUsers: 10, NewUsersPerMinute: 30, SessionDuration: 20 * time.Second,
		RefreshInterval: 5 * time.Second, MaxRefreshInterval: time.Minute, QueueingMethod: usher.FIFO,
		Shards: cfg.shards,
	}}
	s := &room.Settings

	var q farQueue
	seq := 0
	push := func(e farEvent) {
		seq++
		e.seq = seq
		heap.Push(&q, e)
	}
	var all []*farVisitor
	for i := range cfg.visitors {
		v := &farVisitor{id: i, arrive: start.Add(time.Duration(rng.Int64N(int64(90 * time.Second)))),
			browse: 5*time.Second + time.Duration(rng.Int64N(int64(20*time.Second)))}
		if rng.Float64() < 0.2 {
			v.patience = time.Duration(rng.Int64N(int64(4 * time.Minute)))
		}
		all = append(all, v)
		push(farEvent{at: v.arrive, v: v})
	}
	for n := range stores {
		push(farEvent{at: start.Add(time.Duration(rng.Int64N(int64(cfg.maxLate)))), n: n})
		if cfg.shards > 1 {
			push(farEvent{at: start.Add(time.Duration(rng.Int64N(int64(time.Second)))), n: n, step: true})
		}
	}
	dead := make([]time.Time, cfg.nodes) // a node is dead until then
	alive := func(n int) bool { return !now.Before(dead[n]) }
	var res farResult
	var admissions []time.Time
	type adm struct {
		at     time.Time
		bucket int64
	}
	var adms []adm
	activeAt := func(at time.Time) int {
		k := 0
		for _, v := range all {
			for _, ss := range v.sessions {
				if !at.Before(ss[0]) && at.Before(ss[1]) {
					k++
				}
			}
		}
		return k
	}
	lostAny := false
	// exact checks, once every node has flushed, that the store counts
	// exactly the waiting tickets whose cells have not expired.
	exact := func() {
		for _, st := range stores {
			st.FlushMoves(ctx)
		}
		var got int64
		if cfg.shards > 1 {
			// The front's count and the back shards' behind its horizon,
			// read now.
			w, err := stores[0].Waiting(ctx, room.ID, now)
			if err != nil {
				t.Fatal(err)
			}
			got = w
		} else {
			st, err := stores[0].Stats(ctx, room.ID, now)
			if err != nil {
				t.Fatal(err)
			}
			got = st.Waiting
		}
		want := int64(0)
		for _, v := range all {
			if v.ticket != nil && v.ticket.State == usher.Waiting && v.ticket.Cell > now.Unix() {
				want++
			}
		}
		switch {
		case cfg.shards > 1 && got >= want:
			// Spread over shards, a waiter whose count moved between the
			// front and a back shard outside a batch (a call on the
			// front behind the horizon, then a batch to its back shard)
			// may be counted twice until its old cell expires: never
			// less than the live.
			res.over = max(res.over, got-want)
		case got != want:
			t.Fatalf("at %v the store counts %d waiting, the tickets %d", now.Sub(start), got, want)
		}
		res.exact++
	}
	nextExact := start.Add(10 * time.Second)
	end := start.Add(15 * time.Minute)
	for q.Len() > 0 {
		ev := heap.Pop(&q).(farEvent)
		if ev.at.After(end) {
			break
		}
		now = ev.at
		if !lostAny && !now.Before(nextExact) {
			exact()
			nextExact = now.Add(10 * time.Second)
		}
		if ev.v == nil && ev.step {
			push(farEvent{at: now.Add(time.Second), n: ev.n, step: true})
			if !alive(ev.n) || (now.Sub(start) >= cfg.stall[0] && now.Sub(start) < cfg.stall[1]) {
				continue
			}
			if rng.Float64() < cfg.die {
				res.lost += int64(stores[ev.n].LoseMoves())
				lostAny = true
				res.deaths++
				dead[ev.n] = now.Add(3*time.Second + time.Duration(rng.Int64N(int64(5*time.Second))))
				continue
			}
			if stores[ev.n].StepHorizon(ctx, room.ID, now) {
				res.horizons++
			}
			continue
		}
		if ev.v == nil {
			if !alive(ev.n) {
				push(farEvent{at: now.Add(time.Duration(1 + rng.Int64N(int64(cfg.maxLate)))), n: ev.n})
				continue
			}
			if rng.Float64() < cfg.lose {
				res.lost += int64(stores[ev.n].LoseMoves())
				lostAny = true
			} else {
				stores[ev.n].FlushMoves(ctx)
			}
			push(farEvent{at: now.Add(time.Duration(1 + rng.Int64N(int64(cfg.maxLate)))), n: ev.n})
			continue
		}
		v := ev.v
		if v.done {
			continue
		}
		if v.ticket != nil && v.ticket.State == usher.Waiting && v.patience > 0 && now.Sub(v.ticket.ArrivedAt) > v.patience {
			v.abandoned, v.done = true, true
			continue
		}
		if !v.admitted.IsZero() && now.Sub(v.admitted) > v.browse {
			v.done = true
			continue
		}
		inSession := len(v.sessions) > 0 && now.Before(v.sessions[len(v.sessions)-1][1])
		waiting := v.ticket != nil && v.ticket.State == usher.Waiting
		node := rng.IntN(cfg.nodes)
		for k := 0; k < cfg.nodes && !alive(node); k++ {
			node = (node + 1) % cfg.nodes
		}
		if !alive(node) {
			// Every node is down: the visitor tries again in a second.
			push(farEvent{at: now.Add(time.Second), v: v})
			continue
		}
		if v.held > 0 {
			if alive(v.held - 1) {
				node = v.held - 1
			}
			v.held = 0
		} else if waiting {
			// As the gate: a near-front check-in that cannot go in before
			// the next whole second is held to it, on its node.
			if h := engines[node].Hold(&room, v.ticket, now); h > 0 {
				v.held = node + 1
				push(farEvent{at: now.Add(h), v: v})
				continue
			}
		}
		if waiting {
			res.checkIns++
		}
		d, err := engines[node].Decide(ctx, &room, usher.Visit{Ticket: v.ticket, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if debugFar[v.id] {
			t.Logf("visitor %d at %v on node %d: %v position %d refresh %v ahead-stats %+v", v.id, now.Sub(start), node, d.Outcome, d.Position, d.RefreshAfter, d.Stats)
		}
		if d.TicketChanged {
			tk := d.Ticket
			v.ticket = &tk
		}
		switch d.Outcome {
		case usher.Admit:
			switch {
			case d.NewlyAdmitted:
				v.admitted = now
				admissions = append(admissions, now)
				adms = append(adms, adm{now, d.Ticket.Bucket()})
				res.admitted++
				v.sessions = append(v.sessions, [2]time.Time{now, d.Ticket.Until})
			case inSession:
				v.sessions[len(v.sessions)-1][1] = d.Ticket.Until
			default:
				v.sessions = append(v.sessions, [2]time.Time{now, d.Ticket.Until})
			}
			if a := activeAt(now); a > s.TotalActiveUsers {
				t.Fatalf("at %v %d active, over the limit of %d", now.Sub(start), a, s.TotalActiveUsers)
			}
			push(farEvent{at: now.Add(time.Second + time.Duration(rng.Int64N(int64(3*time.Second)))), v: v})
		case usher.Wait:
			if inSession {
				res.requeued++
			}
			v.bucket = v.ticket.Bucket() // a new ticket's, when its session ended
			v.lastWait = now
			push(farEvent{at: v.ticket.NextCheckIn, v: v})
		default:
			t.Fatalf("unexpected outcome %v", d.Outcome)
		}
	}
	// Every node flushes: with nothing lost, the store counts exactly the
	// waiting tickets whose cells have not expired.
	for _, st := range stores {
		st.FlushMoves(ctx)
		fb := st.FarBackStats()
		res.answered += fb.Answered
		res.backMoved += fb.BackMoved
		res.refused += fb.Refused
		if fb.Dropped > 0 {
			t.Fatalf("%d moves dropped by failed batches", fb.Dropped)
		}
	}
	if !lostAny {
		exact()
	}
	sort.Slice(admissions, func(i, j int) bool { return admissions[i].Before(admissions[j]) })
	for i := range admissions {
		k := sort.Search(len(admissions), func(j int) bool { return !admissions[j].Before(admissions[i].Add(time.Minute)) })
		if k-i > s.NewUsersPerMinute {
			t.Fatalf("%d admissions in the minute from %v, over %d", k-i, admissions[i].Sub(start), s.NewUsersPerMinute)
		}
	}
	for _, v := range all {
		if v.lastWait.IsZero() || v.abandoned {
			continue
		}
		for _, a := range adms {
			if !a.at.After(v.lastWait) && a.bucket > v.bucket {
				res.inversions++
				t.Logf("inversion: visitor %d (bucket %d) told to wait at %v after bucket %d went in at %v",
					v.id, v.bucket, v.lastWait.Sub(start), a.bucket, a.at.Sub(start))
				break
			}
		}
	}
	return res
}

// TestFarBackProperties runs the line over nodes whose batches are late,
// out of order between nodes, or lost.
func TestFarBackProperties(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, c := range []struct {
		name string
		cfg  farConfig
	}{
		{"one node, no far-back answers", farConfig{seed: 1, nodes: 1, visitors: 600, maxLate: 200 * time.Millisecond, off: true}},
		{"one node, batches on time", farConfig{seed: 1, nodes: 1, visitors: 600, maxLate: 200 * time.Millisecond}},
		{"three nodes, batches up to 1.5 s late", farConfig{seed: 2, nodes: 3, visitors: 600, maxLate: 1500 * time.Millisecond}},
		{"three nodes, a tenth of the flushes lost", farConfig{seed: 3, nodes: 3, visitors: 600, maxLate: time.Second, lose: 0.1}},
		// A room spread over a front and two back shards.
		{"three shards, three nodes, batches up to 1.5 s late", farConfig{seed: 4, nodes: 3, visitors: 600, maxLate: 1500 * time.Millisecond, shards: 3}},
		{"three shards, nodes dying", farConfig{seed: 5, nodes: 3, visitors: 600, maxLate: time.Second, shards: 3, die: 0.02}},
		{"three shards, the horizon stalled for five minutes", farConfig{seed: 7, nodes: 3, visitors: 600, maxLate: time.Second, shards: 3,
			stall: [2]time.Duration{30 * time.Second, 330 * time.Second}}},
		{"five shards, one node, a tenth of the flushes lost", farConfig{seed: 6, nodes: 1, visitors: 600, maxLate: time.Second, shards: 5, lose: 0.1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := runFar(t, srv, c.cfg)
			t.Logf("%d check-ins, %d answered from views (%.0f %%), %d moves lost, %d admitted, %d inversions, %d re-queued, %d exact counts (%d over at most), %d deaths, %d horizon moves, %d moves on back shards, %d refused there",
				res.checkIns, res.answered, 100*float64(res.answered)/float64(max(res.checkIns, 1)), res.lost, res.admitted,
				res.inversions, res.requeued, res.exact, res.over, res.deaths, res.horizons, res.backMoved, res.refused)
			if res.inversions > 0 || res.requeued > 0 {
				t.Errorf("%d inversions, %d re-queued while browsing; want none", res.inversions, res.requeued)
			}
			if !c.cfg.off && res.answered*3 < res.checkIns {
				t.Errorf("%d of %d check-ins answered from a view: the line was not far back enough to test anything", res.answered, res.checkIns)
			}
			if c.cfg.lose > 0 && res.lost == 0 {
				t.Errorf("no move lost: the case tests nothing")
			}
			if c.cfg.shards > 1 && (res.horizons < 5 || res.backMoved*5 < res.answered) {
				t.Errorf("the horizon moved %d times, %d of %d far-back moves on back shards: the case tests nothing",
					res.horizons, res.backMoved, res.answered)
			}
			if c.cfg.die > 0 && res.deaths == 0 {
				t.Errorf("no node died: the case tests nothing")
			}
		})
	}
}
