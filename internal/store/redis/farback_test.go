package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestFarBackCopiedTicket: a waiter far back whose ticket is copied checks
// in on two nodes at once. Both are answered from the nodes' views without
// a call of their own, and the batches apply one move and find the other
// a replay: the line counts the waiter once, and the copy's next check-in
// gains nothing either. The same holds on a room spread over shards,
// where the waiter's bucket is behind the horizon and its record and
// count on a back shard.
func TestFarBackCopiedTicket(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) { copiedTicket(t, srv, shards) })
	}
}

func copiedTicket(t *testing.T, srv *redistest.Server, shards int) {
	ctx := context.Background()
	pfx := prefix(t)
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	clock := func() time.Time { return now }
	var stores [2]*redis.Store
	var engines [2]*admission.Engine
	for i := range stores {
		stores[i] = mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: pfx, FarBack: redis.FarBack{Manual: true}})
		engines[i] = admission.New(stores[i], admission.Options{Now: clock})
	}
	room := usher.Room{ID: "line", Name: "Line", Settings: usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: time.Hour,
		RefreshInterval: 5 * time.Minute, MaxRefreshInterval: 5 * time.Minute, QueueingMethod: usher.FIFO,
		Shards: shards,
	}}
	waiting := func() int64 {
		t.Helper()
		n, err := stores[0].Waiting(ctx, room.ID, now)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	decide := func(node int, tk *usher.Ticket) usher.Decision {
		t.Helper()
		d, err := engines[node].Decide(ctx, &room, usher.Visit{Ticket: tk, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// One visitor in, then a line of 40: 39 ten a second, the last alone
	// in a later second, so that the 39 are ahead of it.
	if d := decide(0, nil); d.Outcome != usher.Admit {
		t.Fatalf("first visitor: %v", d.Outcome)
	}
	if shards > 1 {
		// A horizon two seconds on; the line comes behind it.
		stores[0].StepHorizon(ctx, room.ID, now)
		now = now.Add(5 * time.Second)
	}
	var line []usher.Ticket
	for i := range 40 {
		// Through both nodes, so that each learns how long the line is
		// (a node reads no view of a room it knows no long line in), with
		// the batches applied as they would be within 100 ms.
		now = now.Add(100 * time.Millisecond)
		if i == 39 {
			now = now.Add(time.Second)
		}
		d := decide(i%2, nil)
		if d.Outcome != usher.Wait {
			t.Fatalf("a newcomer: %v", d.Outcome)
		}
		line = append(line, d.Ticket)
		stores[0].FlushMoves(ctx)
		stores[1].FlushMoves(ctx)
	}
	last := line[len(line)-1]
	// (Its own first answer may be up to a view's age old.)
	const place = 40
	now = last.NextCheckIn
	calls := stores[0].Calls() + stores[1].Calls()
	views := stores[0].FarBackStats().Views + stores[1].FarBackStats().Views
	answered := stores[0].FarBackStats().Answered + stores[1].FarBackStats().Answered
	moved := stores[0].FarBackStats().Moved + stores[1].FarBackStats().Moved
	a, b := decide(0, &last), decide(1, &last) // the ticket and its copy
	for _, d := range []usher.Decision{a, b} {
		if d.Outcome != usher.Wait || d.Position != place {
			t.Fatalf("far-back check-in: %v at position %d, want wait at %d", d.Outcome, d.Position, place)
		}
	}
	viewReads := stores[0].FarBackStats().Views + stores[1].FarBackStats().Views - views
	answered = stores[0].FarBackStats().Answered + stores[1].FarBackStats().Answered - answered
	// Besides the view reads, at most the view script's first load (EVAL
	// after EVALSHA found it missing).
	if got := stores[0].Calls() + stores[1].Calls() - calls; answered != 2 || got > viewReads+1 {
		t.Fatalf("two far-back check-ins: %d answered from views, %d calls for %d view reads", answered, got, viewReads)
	}
	stores[1].FlushMoves(ctx)
	stores[0].FlushMoves(ctx)
	moved = stores[0].FarBackStats().Moved + stores[1].FarBackStats().Moved - moved
	replays := stores[0].FarBackStats().Replays + stores[1].FarBackStats().Replays
	if moved != 1 || replays != 1 {
		t.Fatalf("the batches moved %d and found %d replays, want 1 and 1", moved, replays)
	}
	if back := stores[0].FarBackStats().BackMoved + stores[1].FarBackStats().BackMoved; shards > 1 && back == 0 {
		t.Fatal("no move on a back shard: the case tests nothing")
	}
	if n := waiting(); n != 40 {
		t.Fatalf("%d waiting after a copied check-in, want 40", n)
	}
	// Both answers' tickets check in again, when everyone else's count has
	// lapsed (they never checked in): one count, at the front.
	now = a.Ticket.NextCheckIn
	if shards > 1 {
		// The horizon takes its bucket in, with its count and record.
		stores[1].StepHorizon(ctx, room.ID, now)
	}
	ta, tb := a.Ticket, b.Ticket
	da, db := decide(0, &ta), decide(1, &tb)
	stores[0].FlushMoves(ctx)
	stores[1].FlushMoves(ctx)
	if n := waiting(); n != 1 || da.Position != 1 || db.Position != 1 {
		t.Fatalf("after the copies' next check-ins: %d waiting, positions %d and %d; want 1, 1, 1", n, da.Position, db.Position)
	}
}

// oneNode is a node on simulated time: a Store whose batches and horizon
// steps the test runs (FarBack.Manual) and an engine deciding for room.
type oneNode struct {
	t    *testing.T
	ctx  context.Context
	st   *redis.Store
	eng  *admission.Engine
	room usher.Room
	now  time.Time
}

func newOneNode(t *testing.T, s usher.Settings) *oneNode {
	srv := redistest.StartServer(t)
	n := &oneNode{t: t, ctx: context.Background(), now: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC),
		room: usher.Room{ID: "line", Name: "Line", Settings: s}}
	n.st = mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t), FarBack: redis.FarBack{Manual: true}})
	n.eng = admission.New(n.st, admission.Options{Now: func() time.Time { return n.now }})
	return n
}

func (n *oneNode) decide(tk *usher.Ticket) usher.Decision {
	n.t.Helper()
	d, err := n.eng.Decide(n.ctx, &n.room, usher.Visit{Ticket: tk, Now: n.now})
	if err != nil {
		n.t.Fatal(err)
	}
	return d
}

// waiting reads the room's live waiters now: the front's and the back
// shards' behind its horizon.
func (n *oneNode) waiting() int64 {
	n.t.Helper()
	w, err := n.st.Waiting(n.ctx, n.room.ID, n.now)
	if err != nil {
		n.t.Fatal(err)
	}
	return w
}

func (n *oneNode) step() bool { return n.st.StepHorizon(n.ctx, n.room.ID, n.now) }

// TestHorizonAdmitsNobodyBehind: in a room spread over shards, the front
// admits nobody behind its serving horizon, free places or not: a waiter
// there may have others ahead of it counted on the back shards. A horizon
// that stops (its holder gone) costs places, never the order; once it
// moves on, the waiter goes in.
func TestHorizonAdmitsNobodyBehind(t *testing.T) {
	n := newOneNode(t, usher.Settings{
		TotalActiveUsers: 5, NewUsersPerMinute: 60, SessionDuration: time.Hour,
		RefreshInterval: 5 * time.Second, QueueingMethod: usher.FIFO, Shards: 3,
	})
	if d := n.decide(nil); d.Outcome != usher.Admit {
		t.Fatalf("the first visitor: %v, want admitted", d.Outcome)
	}
	if !n.step() {
		t.Fatal("the first step set no horizon")
	}
	n.now = n.now.Add(20 * time.Second) // no step since: the horizon is 2 s after the first
	d := n.decide(nil)
	if d.Outcome != usher.Wait {
		t.Fatalf("a visitor behind the horizon with 4 places free: %v, want to wait", d.Outcome)
	}
	tk := d.Ticket
	if !n.step() {
		t.Fatal("the horizon did not move on")
	}
	n.now = tk.NextCheckIn
	if d := n.decide(&tk); d.Outcome != usher.Admit {
		t.Fatalf("at its check-in after the horizon moved on: %v, want admitted", d.Outcome)
	}
}

// TestCrossingHandsRecordsOver: a waiter far back in a room spread over
// shards checks in on its back shard, which keeps its record; when its
// bucket crosses the horizon the back shard hands the record over with
// the count, so an old ticket of the waiter presented at the front is a
// replay there as it would have been on the back shard: the line still
// counts the waiter once. (Without the hand-over the front, knowing no
// record, believes the old ticket and counts the waiter a second time.)
func TestCrossingHandsRecordsOver(t *testing.T) {
	n := newOneNode(t, usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: time.Hour,
		RefreshInterval: 5 * time.Minute, MaxRefreshInterval: 5 * time.Minute, QueueingMethod: usher.FIFO, Shards: 3,
	})
	if d := n.decide(nil); d.Outcome != usher.Admit {
		t.Fatalf("the first visitor: %v, want admitted", d.Outcome)
	}
	n.step()
	// A line of 40 behind the horizon; the last, alone in a later second,
	// is far back.
	n.now = n.now.Add(5 * time.Second)
	var x usher.Ticket
	var lapse int64 // when the last of the others' counts lapses
	for i := range 40 {
		n.now = n.now.Add(100 * time.Millisecond)
		if i == 39 {
			n.now = n.now.Add(time.Second)
		}
		d := n.decide(nil)
		if d.Outcome != usher.Wait {
			t.Fatalf("a newcomer: %v", d.Outcome)
		}
		if i < 39 {
			lapse = max(lapse, d.Ticket.Cell)
		}
		x = d.Ticket
		n.st.FlushMoves(n.ctx)
	}
	old := x
	n.now = x.NextCheckIn
	backMoved := n.st.FarBackStats().BackMoved
	d := n.decide(&x)
	n.st.FlushMoves(n.ctx)
	if d.Outcome != usher.Wait || n.st.FarBackStats().BackMoved != backMoved+1 {
		t.Fatalf("its check-in: %v, %d moves on back shards; want to wait, moved on its back shard", d.Outcome, n.st.FarBackStats().BackMoved-backMoved)
	}
	// The others never check in: once their counts lapse, the horizon
	// takes the waiter's bucket in, with its record.
	n.now = time.Unix(max(lapse, old.Cell)+2, 0)
	if n.now.Unix() >= d.Ticket.Cell {
		t.Fatalf("the others' counts lapse at %v, the waiter's at %v", lapse, d.Ticket.Cell)
	}
	if !n.step() {
		t.Fatal("the horizon did not move")
	}
	if w := n.waiting(); w != 1 {
		t.Fatalf("%d waiting once the others lapsed, want 1", w)
	}
	// Its old ticket at the front: a replay, nothing counted.
	n.now = n.now.Add(time.Second)
	if d := n.decide(&old); d.Outcome != usher.Wait {
		t.Fatalf("its old ticket: %v, want to wait", d.Outcome)
	}
	if w := n.waiting(); w != 1 {
		t.Fatalf("%d waiting after its old ticket was presented at the front, want 1 (the back shard's record handed over)", w)
	}
}
