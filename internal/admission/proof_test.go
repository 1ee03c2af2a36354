package admission

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// powRoom is simRoom with a proof of work, asked always or only of new
// visitors that would wait, and room for total.
func powRoom(total int, always bool) usher.Room {
	room := simRoom()
	room.TotalActiveUsers = total
	room.ProofOfWork = usher.ProofOfWork{Difficulty: 10, Always: always}
	return room
}

// solver is a gate's side of the proof of work: it counts the spends the
// engine asks for and answers them good (solved) or not.
type solver struct {
	solved bool
	spends atomic.Int64
}

// proof returns the visit's Proof: a solution brought when s is not nil.
func (s *solver) proof() usher.Proof {
	if s == nil {
		return usher.Proof{On: true}
	}
	return usher.Proof{On: true, Spend: func(context.Context) (bool, error) {
		s.spends.Add(1)
		return s.solved, nil
	}}
}

func visit(t testing.TB, e *Engine, room *usher.Room, tk *usher.Ticket, now time.Time, s *solver) usher.Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), room, usher.Visit{Ticket: tk, Now: now, Proof: s.proof()})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestProofAskedWhereverAPlaceIsMade: in a room that asks the proof only
// of new visitors that would wait, a visitor that goes in at once into a
// free slot is not asked; then every way a request makes a new visitor
// (no ticket, a ticket whose session ended, a revoked ticket, a waiting
// ticket given up, a ticket of another room's settings that holds no
// session) is asked, holds no place meanwhile, and a solution earns one
// new visitor. A waiter's own check-ins are never asked.
func TestProofAskedWhereverAPlaceIsMade(t *testing.T) {
	st := memStore(t)
	e := New(st, Options{Rand: newRand(7)})
	room := powRoom(1, false)
	in := visit(t, e, &room, nil, t0, nil)
	if in.Outcome != usher.Admit || !in.NewlyAdmitted {
		t.Fatalf("a new visitor into a free slot: %v, want admitted without a proof", in.Outcome)
	}
	good := &solver{solved: true}
	wait := visit(t, e, &room, nil, t0.Add(time.Second), good)
	if wait.Outcome != usher.Wait || good.spends.Load() != 1 {
		t.Fatalf("a new visitor with a solution in a full room: %v after %d spends, want a place in line after 1", wait.Outcome, good.spends.Load())
	}
	revoked := in.Ticket
	if _, err := e.Revoke(context.Background(), &room, revoked.VisitorID, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	ended := in.Ticket
	ended.VisitorID[0] ^= 0xff // another visitor's ticket of the same session length
	future := t0.Add(time.Hour)
	given := wait.Ticket // not seen for an hour: given up
	// From here on nobody new goes in at once (queue_all), so that a new
	// visitor would wait at any of the times below.
	room.QueueAll = true
	for _, tc := range []struct {
		name string
		tk   *usher.Ticket
		at   time.Time
	}{
		{"no ticket", nil, t0.Add(3 * time.Second)},
		{"a revoked ticket", &revoked, t0.Add(3 * time.Second)},
		{"a ticket whose session ended", &ended, ended.Until.Add(time.Second)},
		{"a waiting ticket given up", &given, future},
	} {
		waiting := mustStats(t, e, &room, tc.at).Waiting
		if d := visit(t, e, &room, tc.tk, tc.at, nil); d.Outcome != usher.Challenge || d.TicketChanged {
			t.Errorf("%s, no solution: %v (ticket changed %v), want a challenge", tc.name, d.Outcome, d.TicketChanged)
		}
		if w := mustStats(t, e, &room, tc.at).Waiting; w != waiting {
			t.Errorf("%s, no solution: waiting %d -> %d, want no place taken", tc.name, waiting, w)
		}
		spent := &solver{solved: false}
		if d := visit(t, e, &room, tc.tk, tc.at, spent); d.Outcome != usher.Challenge || spent.spends.Load() != 1 {
			t.Errorf("%s, a solution spent already: %v after %d spends, want a challenge after 1", tc.name, d.Outcome, spent.spends.Load())
		}
		ok := &solver{solved: true}
		if d := visit(t, e, &room, tc.tk, tc.at, ok); d.Outcome != usher.Wait || ok.spends.Load() != 1 {
			t.Errorf("%s, a good solution: %v after %d spends, want a place after 1", tc.name, d.Outcome, ok.spends.Load())
		}
	}
	// The waiter's own check-in: never asked, never spends.
	check := &solver{solved: true}
	if d := visit(t, e, &room, &wait.Ticket, wait.Ticket.NextCheckIn, check); d.Outcome != usher.Wait || check.spends.Load() != 0 {
		t.Errorf("a waiter's check-in: %v after %d spends, want a wait and no spend", d.Outcome, check.spends.Load())
	}
	// An invite makes a new visitor that the invite paid for.
	d, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0.Add(4 * time.Second), Invite: usher.InviteFront, Proof: usher.Proof{On: true}})
	if err != nil || d.Outcome == usher.Challenge {
		t.Errorf("an invite: %v, %v; want no challenge", d.Outcome, err)
	}
}

// mustStats reads the room's counters through the engine.
func mustStats(t testing.TB, e *Engine, room *usher.Room, now time.Time) usher.RoomStats {
	t.Helper()
	st, err := e.Status(context.Background(), room, now)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestProofAlwaysAskedBeforeTheStore: with always, a new visitor is asked
// even with free slots, and nothing is counted until it brings a
// solution; the gate's Proof off (it issues no challenges) asks nothing.
func TestProofAlwaysAskedBeforeTheStore(t *testing.T) {
	e := newEngine(t)
	room := powRoom(10, true)
	for range 5 {
		if d := visit(t, e, &room, nil, t0, nil); d.Outcome != usher.Challenge {
			t.Fatalf("always, free slots, no solution: %v, want a challenge", d.Outcome)
		}
	}
	if st := mustStats(t, e, &room, t0); st.Active != 0 || st.Waiting != 0 {
		t.Fatalf("after 5 challenges: %+v, want nothing counted", st)
	}
	if d := visit(t, e, &room, nil, t0, &solver{solved: true}); d.Outcome != usher.Admit {
		t.Fatalf("always, a good solution: %v, want admitted", d.Outcome)
	}
	d, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0})
	if err != nil || d.Outcome != usher.Admit {
		t.Fatalf("no Proof (the gate issues no challenges): %v, %v; want admitted", d.Outcome, err)
	}
}

// TestProofBurstTakesTheFreeSlotsOnly: 100 parallel new visitors without
// a solution on 3 free slots: 3 go in, 97 are challenged, none waits.
func TestProofBurstTakesTheFreeSlotsOnly(t *testing.T) {
	e := newEngine(t)
	room := powRoom(3, false)
	var wg sync.WaitGroup
	var in, asked atomic.Int64
	for range 100 {
		wg.Go(func() {
			d, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0, Proof: usher.Proof{On: true}})
			switch {
			case err != nil:
			case d.Outcome == usher.Admit:
				in.Add(1)
			case d.Outcome == usher.Challenge:
				asked.Add(1)
			}
		})
	}
	wg.Wait()
	if in.Load() != 3 || asked.Load() != 97 {
		t.Fatalf("100 new visitors on 3 free slots: %d in, %d challenged; want 3 and 97", in.Load(), asked.Load())
	}
	if st := mustStats(t, e, &room, t0); st.Waiting != 0 {
		t.Fatalf("waiting = %d, want 0", st.Waiting)
	}
}

// TestSessionEndedToldOnce: 50 requests with a ticket whose session ended,
// on two engines sharing a store (two nodes), tell the end once; a
// revoked session's ticket tells nothing; the observer hears one Ended.
func TestSessionEndedToldOnce(t *testing.T) {
	st := memStore(t)
	var tl tally
	a := New(st, Options{Rand: newRand(1), Observer: &tl})
	b := New(st, Options{Rand: newRand(2), Observer: &tl})
	room := simRoom()
	one := decide(t, a, &room, nil, t0).Ticket
	two := decide(t, a, &room, nil, t0).Ticket
	ok, err := b.Revoke(context.Background(), &room, two.VisitorID, t0.Add(time.Second))
	if err != nil || !ok {
		t.Fatalf("revoke: %v, %v; want ended", ok, err)
	}
	after := one.Until.Add(time.Second)
	told := 0
	for i := range 50 {
		e := a
		if i%2 == 1 {
			e = b
		}
		if decide(t, e, &room, &one, after.Add(time.Duration(i)*time.Millisecond)).SessionEnded {
			told++
		}
		if decide(t, e, &room, &two, after.Add(time.Duration(i)*time.Millisecond)).SessionEnded {
			t.Fatalf("request %d with the revoked ticket told a session end", i)
		}
	}
	if told != 1 || tl.count(Ended) != 1 {
		t.Fatalf("50 requests with an ended ticket on two nodes: told %d times, %d observed; want 1 and 1", told, tl.count(Ended))
	}
	// Back after the window: a new visitor, and nothing told.
	late := decide(t, a, &room, &one, one.Until.Add(EndedWindow+time.Minute))
	if late.SessionEnded || late.Ticket.VisitorID == one.VisitorID {
		t.Fatalf("back after the window: told %v, same visitor %v; want a new visitor, nothing told", late.SessionEnded, late.Ticket.VisitorID == one.VisitorID)
	}
}

// TestRevokeOnce: 20 revocations of one session, in parallel on two
// engines sharing a store, end it once: one call reports it, the
// observers hear one Revoked, the slot is given back once.
func TestRevokeOnce(t *testing.T) {
	st := memStore(t)
	var tl tally
	a := New(st, Options{Rand: newRand(1), Observer: &tl})
	b := New(st, Options{Rand: newRand(2), Observer: &tl})
	room := simRoom()
	tk := decide(t, a, &room, nil, t0).Ticket
	decide(t, a, &room, nil, t0) // another session runs on
	var wg sync.WaitGroup
	var ended atomic.Int64
	for i := range 20 {
		e := a
		if i%2 == 1 {
			e = b
		}
		wg.Go(func() {
			if ok, err := e.Revoke(context.Background(), &room, tk.VisitorID, t0.Add(time.Second)); err == nil && ok {
				ended.Add(1)
			}
		})
	}
	wg.Wait()
	if ended.Load() != 1 || tl.count(Revoked) != 1 {
		t.Fatalf("20 revocations of one session: %d ended it, %d observed; want 1 and 1", ended.Load(), tl.count(Revoked))
	}
	if s := mustStats(t, a, &room, t0.Add(2*time.Second)); s.Active != 1 {
		t.Fatalf("active = %d, want the other session's 1", s.Active)
	}
}

// TestProofAskedWhileTheStoreIsDown: with the store down and fail_mode
// closed, a new visitor without a proof is challenged rather than given
// the fail mode's waiting ticket (which would hold its arrival, unpaid,
// once the store is back); with fail_mode open it is admitted uncounted,
// as every new visitor is.
func TestProofAskedWhileTheStoreIsDown(t *testing.T) {
	for _, open := range []bool{false, true} {
		e, f := newFlaky(t, open)
		room := powRoom(1, false)
		f.down = true
		d := visit(t, e, &room, nil, t0, nil)
		want := usher.Challenge
		if open {
			want = usher.Admit
		}
		if d.Outcome != want || !d.Degraded {
			t.Errorf("fail open %v, store down, no proof: %v (degraded %v), want %v", open, d.Outcome, d.Degraded, want)
		}
		if !open && d.TicketChanged {
			t.Error("fail closed: a challenged visitor got a ticket")
		}
		if d := visit(t, e, &room, nil, t0, &solver{solved: true}); d.Outcome != usher.Wait && d.Outcome != usher.Admit {
			t.Errorf("fail open %v, store down, a good proof: %v, want the fail mode's decision", open, d.Outcome)
		}
	}
}

// TestProofPaysForEveryPlace is a property test: visitors without
// tickets, with waiting or admitted tickets of any age, revoked or not,
// with a good solution, a spent one or none, in random order over
// simulated minutes. Whenever a decision makes a new visitor that waits,
// that decision spent a good solution; a challenge changes no count; no
// decision spends twice, and a waiter's or a live session's own request
// never spends.
func TestProofPaysForEveryPlace(t *testing.T) {
	for seed := range uint64(5) {
		e := New(memStore(t), Options{Rand: newRand(seed + 10)})
		room := powRoom(3, false)
		rng := newRand(seed)
		known := map[[8]byte]bool{}
		var tickets []usher.Ticket
		now := t0
		for step := range 400 {
			now = now.Add(time.Duration(rng()%3000) * time.Millisecond)
			var tk *usher.Ticket
			if len(tickets) > 0 && rng()%3 != 0 {
				c := tickets[rng()%uint64(len(tickets))]
				tk = &c
			}
			if tk != nil && tk.State == usher.Admitted && rng()%10 == 0 {
				if _, err := e.Revoke(context.Background(), &room, tk.VisitorID, now); err != nil {
					t.Fatal(err)
				}
			}
			var s *solver
			switch rng() % 3 {
			case 1:
				s = &solver{solved: true}
			case 2:
				s = &solver{solved: false}
			}
			before := mustStats(t, e, &room, now)
			d := visit(t, e, &room, tk, now, s)
			spends := int64(0)
			if s != nil {
				spends = s.spends.Load()
			}
			if spends > 1 {
				t.Fatalf("seed %d step %d: %d spends in one decision", seed, step, spends)
			}
			keeps := tk != nil && d.Ticket.VisitorID == tk.VisitorID && d.Outcome != usher.Challenge
			if keeps && spends != 0 {
				t.Fatalf("seed %d step %d: a visitor that kept its ticket spent a solution (%v)", seed, step, d.Outcome)
			}
			switch {
			case d.Outcome == usher.Challenge:
				if after := mustStats(t, e, &room, now); after.Waiting != before.Waiting || after.Active != before.Active {
					t.Fatalf("seed %d step %d: a challenge changed the counts: %+v -> %+v", seed, step, before, after)
				}
			case d.TicketChanged && !known[d.Ticket.VisitorID]:
				known[d.Ticket.VisitorID] = true
				if d.Outcome == usher.Wait && (s == nil || !s.solved || spends != 1) {
					t.Fatalf("seed %d step %d: a new visitor got a place in line without paying", seed, step)
				}
			}
			if d.TicketChanged {
				tickets = append(tickets, d.Ticket)
			}
		}
	}
}
