package admission

import (
	"context"
	"math/rand/v2"
	"net/netip"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// memStore returns an embedded store in memory, closed when t ends.
func memStore(t testing.TB) *local.Store {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newEngine(t testing.TB) *Engine {
	t.Helper()
	return New(memStore(t), Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64})
}

func decide(t testing.TB, e *Engine, room *usher.Room, tk *usher.Ticket, now time.Time) usher.Decision {
	t.Helper()
	d, err := e.Decide(context.Background(), room, usher.Visit{Ticket: tk, Now: now, Client: client(tk)})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// client is a test visitor's address: its own, as if each visitor came
// from its own address (the zero Addr without a ticket: unknown).
func client(tk *usher.Ticket) netip.Addr {
	if tk == nil {
		return netip.Addr{}
	}
	var a [16]byte
	copy(a[8:], tk.VisitorID[:])
	return netip.AddrFrom16(a)
}

func TestNoEarlyQueueing(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 5
	for i := range 5 {
		d := decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond))
		if d.Outcome != usher.Admit || !d.NewlyAdmitted || !d.TicketChanged {
			t.Fatalf("visitor %d into a room with free slots: %v", i, d.Outcome)
		}
		if d.Ticket.State != usher.Admitted || d.Ticket.Cell == 0 {
			t.Fatalf("visitor %d ticket: %+v", i, d.Ticket)
		}
	}
	if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Wait || d.Position != 1 {
		t.Fatalf("sixth visitor: %v at %d, want waiting first in line", d.Outcome, d.Position)
	}
}

func TestSessionKeptAndRenewed(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	d := decide(t, e, &room, nil, t0)
	tk := d.Ticket
	// Requests every 10 s for two minutes: always admitted, the session
	// end always at least 15 s after the last request.
	for now := t0.Add(10 * time.Second); now.Before(t0.Add(2 * time.Minute)); now = now.Add(10 * time.Second) {
		d := decide(t, e, &room, &tk, now)
		if d.Outcome != usher.Admit || d.NewlyAdmitted {
			t.Fatalf("at %v: %v (newly %v), want the session kept", now.Sub(t0), d.Outcome, d.NewlyAdmitted)
		}
		if d.TicketChanged {
			tk = d.Ticket
		}
		if end := room.Session(&tk, now).End; end.Before(now.Add(room.SessionDuration)) {
			t.Fatalf("session ends %v, before last request + duration %v", end, now.Add(room.SessionDuration))
		}
		// Someone else is kept out all along: the renewal counts once.
		if w := decide(t, e, &room, nil, now); w.Outcome != usher.Wait || w.Stats.Active != 1 {
			t.Fatalf("another visitor at %v: %v with active %d", now.Sub(t0), w.Outcome, w.Stats.Active)
		}
	}
}

func TestSessionEndsWithoutRenewal(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.DisableSessionRenewal = true
	tk := decide(t, e, &room, nil, t0).Ticket
	if d := decide(t, e, &room, &tk, t0.Add(14*time.Second)); d.Outcome != usher.Admit || d.TicketChanged {
		t.Fatalf("within the session: %v changed=%v", d.Outcome, d.TicketChanged)
	}
	d := decide(t, e, &room, &tk, t0.Add(15*time.Second))
	if !d.NewlyAdmitted {
		t.Fatalf("after the session: newly admitted = %v, want a new admission", d.NewlyAdmitted)
	}
	if !d.Ticket.ArrivedAt.Equal(t0.Add(15 * time.Second)) {
		t.Fatalf("after the session the visitor arrives anew, got arrival %v", d.Ticket.ArrivedAt)
	}
}

func TestAbandonedWaitersDoNotStall(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // 2 s refresh, 15 s sessions
	room.TotalActiveUsers = 1
	holder := decide(t, e, &room, nil, t0).Ticket
	// Three waiters arrive and then close the tab.
	for i := 1; i <= 3; i++ {
		decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Second))
	}
	// A fourth keeps checking in.
	w := decide(t, e, &room, nil, t0.Add(4*time.Second)).Ticket
	_ = holder
	// The holder leaves: its session ends at 15 s. The fourth waiter must be
	// in within one refresh interval plus the dead waiters' grace.
	deadline := t0.Add(15*time.Second + room.RefreshInterval + MaxJitter(room.RefreshInterval) + Grace(room.RefreshInterval))
	for now := t0.Add(6 * time.Second); ; {
		d := decide(t, e, &room, &w, now)
		if d.Outcome == usher.Admit {
			if now.After(deadline) {
				t.Fatalf("admitted at %v, after %v", now.Sub(t0), deadline.Sub(t0))
			}
			return
		}
		if now.After(deadline) {
			t.Fatalf("still waiting at %v behind abandoned places (position %d)", now.Sub(t0), d.Position)
		}
		w = d.Ticket
		now = w.NextCheckIn
	}
}

func TestCheckInsAreJittered(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	room.RefreshInterval = 20 * time.Second
	decide(t, e, &room, nil, t0)
	jitters, waits := map[time.Duration]bool{}, map[time.Duration]bool{}
	for i := range 52 {
		// One a second: from the third on, they are not near the front
		// (which checks in twice as often).
		at := t0.Add(time.Duration(i) * time.Second)
		d := decide(t, e, &room, nil, at)
		if i < 2 {
			continue
		}
		j := d.Ticket.Jitter
		if j < -MaxJitter(room.RefreshInterval) || j > MaxJitter(room.RefreshInterval) {
			t.Fatalf("waiter %d: jitter %v out of bounds", i, j)
		}
		if want := (room.RefreshInterval + j).Round(time.Second); d.RefreshAfter != want || !d.Ticket.NextCheckIn.Equal(at.Add(want)) {
			t.Fatalf("waiter %d: jitter %v, page waits %v and next check-in %v; want %v", i, j, d.RefreshAfter, d.Ticket.NextCheckIn.Sub(at), want)
		}
		jitters[j], waits[d.RefreshAfter] = true, true
	}
	// Whole seconds on the page, spread over the jitter's range.
	if len(jitters) < 25 || len(waits) < 4 {
		t.Fatalf("50 waiters: %d jitters, %d distinct waits", len(jitters), len(waits))
	}
}

func TestSwitches(t *testing.T) {
	t.Run("suspended passes without counting", func(t *testing.T) {
		e := newEngine(t)
		room := simRoom()
		room.Suspended = true
		if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Pass || d.TicketChanged {
			t.Fatalf("suspended: %v changed=%v", d.Outcome, d.TicketChanged)
		}
		if st, _ := e.Status(context.Background(), &room, t0); st.Active != 0 || st.Waiting != 0 {
			t.Fatalf("suspended room counted: %+v", st)
		}
	})
	t.Run("queue_all queues new visitors and keeps sessions", func(t *testing.T) {
		e := newEngine(t)
		room := simRoom()
		in := decide(t, e, &room, nil, t0).Ticket
		room.QueueAll = true
		if d := decide(t, e, &room, nil, t0.Add(time.Second)); d.Outcome != usher.Wait || !d.QueueAll {
			t.Fatalf("queue_all new visitor: %v", d.Outcome)
		}
		if d := decide(t, e, &room, &in, t0.Add(2*time.Second)); d.Outcome != usher.Admit {
			t.Fatalf("queue_all admitted visitor: %v", d.Outcome)
		}
	})
	t.Run("passthrough admits over the limit and counts", func(t *testing.T) {
		e := newEngine(t)
		room := simRoom()
		room.TotalActiveUsers = 1
		room.QueueingMethod = usher.Passthrough
		for i := range 3 {
			if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Admit || d.Stats.Active != int64(i+1) {
				t.Fatalf("passthrough %d: %v active %d", i, d.Outcome, d.Stats.Active)
			}
		}
	})
	t.Run("reject turns new visitors away and keeps sessions", func(t *testing.T) {
		e := newEngine(t)
		room := simRoom()
		in := decide(t, e, &room, nil, t0).Ticket
		room.QueueingMethod = usher.Reject
		if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Turn {
			t.Fatalf("reject new visitor: %v", d.Outcome)
		}
		if d := decide(t, e, &room, &in, t0.Add(time.Second)); d.Outcome != usher.Admit {
			t.Fatalf("reject admitted visitor: %v", d.Outcome)
		}
	})
}

func TestEstimatedWait(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 10
	room.NewUsersPerMinute = 10
	for range 10 {
		decide(t, e, &room, nil, t0)
	}
	// 10 admissions at t0 and no slots: the rate window lets the next ten
	// in at t0+61 s (the window is 61 whole seconds), ten more at t0+121 s,
	// and the 21st in line at t0+181 s, 179 s after it arrives, plus the
	// quarter refresh interval (0.5 s) a check-in near the front takes on
	// average to come.
	var d usher.Decision
	for range 20 {
		d = decide(t, e, &room, nil, t0.Add(time.Second))
	}
	if d.Position != 1 {
		// All twenty arrived in the same second: nobody is ahead.
		t.Fatalf("position = %d, want 1 (same bucket)", d.Position)
	}
	d = decide(t, e, &room, nil, t0.Add(2*time.Second))
	if !d.WaitKnown || d.Position != 21 || d.EstimatedWait != 2*time.Minute+59*time.Second+500*time.Millisecond {
		t.Fatalf("21st in line: known=%v position=%d wait=%v, want 2m59.5s", d.WaitKnown, d.Position, d.EstimatedWait)
	}
}

func TestTicketFromTheFutureIsNew(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	forged := usher.Ticket{State: usher.Waiting, ArrivedAt: t0.Add(-time.Hour)}
	if d := decide(t, e, &room, &forged, t0); d.Position != 1 {
		t.Fatalf("an old waiting ticket keeps its place: position %d", d.Position)
	}
	future := usher.Ticket{State: usher.Admitted, AdmittedAt: t0.Add(time.Hour), CountedAt: t0.Add(time.Hour)}
	if d := decide(t, e, &room, &future, t0); d.Outcome == usher.Admit {
		t.Fatal("a ticket admitted in the future was honoured")
	}
}

func newRand(seed uint64) func() uint64 { return rand.New(rand.NewPCG(seed, 2)).Uint64 }

func TestNearTheFrontChecksInSooner(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 10
	room.RefreshInterval = 10 * time.Second
	room.SessionDuration = time.Minute
	for range 10 {
		decide(t, e, &room, nil, t0)
	}
	// 10 admissions in the last minute, sessions of a minute: about 1.7 go
	// in per 10 s refresh interval, and no session ends within the next
	// one. The first two in line check in every 5 s, the rest every 10 s.
	for i := range 6 {
		d := decide(t, e, &room, nil, t0.Add(time.Duration(i+1)*time.Second))
		half := d.RefreshAfter <= 6*time.Second
		if near := i < 2; half != near {
			t.Fatalf("position %d: refresh %v", d.Position, d.RefreshAfter)
		}
	}
}

func TestSessionOutlivesItsEvent(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // the room's sessions last 15 s
	long := 10 * time.Minute
	room.Events = []usher.Event{{Name: "drop", Start: t0, End: t0.Add(time.Minute), Overrides: usher.Overrides{SessionDuration: &long}}}
	tk := decide(t, e, &room, nil, t0.Add(50*time.Second)).Ticket
	// Twenty seconds after the event's end, the room's own 15 s would have
	// ended the session; the event's 10 minutes still hold.
	d := decide(t, e, &room, &tk, t0.Add(80*time.Second))
	if d.Outcome != usher.Admit || d.NewlyAdmitted {
		t.Fatalf("after the event: %v (newly %v), want the session kept", d.Outcome, d.NewlyAdmitted)
	}
}

func TestLongAbsentWaiterStartsOver(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	old := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	later := t0.Add(2 * time.Second)
	for range 3 {
		decide(t, e, &room, nil, later) // three arrive later and wait
	}
	back := t0.Add(time.Second + MaxAbsence(room.RefreshInterval) + time.Second)
	if d := decide(t, e, &room, &old, back); !d.Ticket.ArrivedAt.Equal(back) {
		t.Fatalf("a waiter back after %v keeps its arrival %v", MaxAbsence(room.RefreshInterval), d.Ticket.ArrivedAt)
	}
	// Within the limit, the place is kept.
	e2 := newEngine(t)
	decide(t, e2, &room, nil, t0)
	kept := decide(t, e2, &room, nil, t0.Add(time.Second)).Ticket
	if d := decide(t, e2, &room, &kept, t0.Add(5*time.Minute)); !d.Ticket.ArrivedAt.Equal(kept.ArrivedAt) {
		t.Fatal("a waiter back after five minutes lost its place")
	}
}

func TestQueueAllClaimsNoWait(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.QueueAll = true
	if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Wait || d.WaitKnown {
		t.Fatalf("queue_all: %v known=%v, want waiting with the wait unknown", d.Outcome, d.WaitKnown)
	}
}
