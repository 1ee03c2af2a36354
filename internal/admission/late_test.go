package admission

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// lateStore answers every renewal as a store whose calls travel does when
// the answer comes back after the op's By, and remembers each op's By.
type lateStore struct {
	usher.Store
	late bool
	// fail, when set, fails every other renewal (the others late).
	fail bool
	n    int
	by   []time.Time
}

func (s *lateStore) Renew(ctx context.Context, room string, op usher.RenewOp) (usher.RenewResult, error) {
	s.by = append(s.by, op.By)
	s.n++
	switch {
	case s.fail && s.n%2 == 1:
		return usher.RenewResult{}, usher.Errorf(usher.EUnavailable, "store down")
	case s.late || s.fail:
		return usher.RenewResult{}, usher.ErrRenewLate
	}
	return s.Store.Renew(ctx, room, op)
}

// TestRenewalsAreDueBackBeforeTheCountCanLapse: a renewal must come back
// before any node can have counted its session out: by its cell less the
// clocks' measured spread, or less the cell slack while none is measured.
// One answered later leaves the visitor its ticket (its session runs to
// the end it was counted to), is counted as late, and says nothing of the
// store's health: late renewals alone never open the breaker, and failures
// with late renewals between them still do.
func TestRenewalsAreDueBackBeforeTheCountCanLapse(t *testing.T) {
	st := memStore(t)
	ls := &lateStore{Store: st}
	const slack = 250 * time.Millisecond
	e := New(ls, Options{Rand: rand.New(rand.NewPCG(5, 6)).Uint64, CellSlack: slack})
	room := simRoom()
	room.TotalActiveUsers = 10
	a := decide(t, e, &room, nil, t0)
	if a.Outcome != usher.Admit {
		t.Fatalf("first visitor: %v", a.Outcome)
	}
	tk := a.Ticket
	// Not measured: the slack bounds the spread.
	now := tk.Until.Add(-10 * time.Millisecond)
	d := decide(t, e, &room, &tk, now)
	if d.Outcome != usher.Admit || !d.TicketChanged || len(ls.by) != 1 {
		t.Fatalf("renewal: %+v, %d renewals", d, len(ls.by))
	}
	if want := time.Unix(tk.Cell, 0).Add(-slack); !ls.by[0].Equal(want) {
		t.Errorf("renewal due back by %v, want the cell less the slack, %v", ls.by[0], want)
	}
	tk = d.Ticket
	// Measured: the spread.
	e.SetClockSpread(300 * time.Microsecond)
	d = decide(t, e, &room, &tk, tk.Until.Add(-10*time.Millisecond))
	if want := time.Unix(tk.Cell, 0).Add(-300 * time.Microsecond); len(ls.by) != 2 || !ls.by[1].Equal(want) {
		t.Fatalf("renewal due back by %v, want the cell less the spread, %v", ls.by, want)
	}
	tk = d.Ticket
	if by := e.renewBy(0); !by.IsZero() {
		t.Errorf("a ticket counted in no cell: renewal due back by %v, want no bound", by)
	}

	// Every renewal answered late, more of them than open the breaker.
	ls.late = true
	for i := range BreakerFailures + 3 {
		now := tk.Until.Add(-time.Duration(10+i) * time.Millisecond)
		d := decide(t, e, &room, &tk, now)
		if d.Outcome != usher.Admit || d.TicketChanged || d.Ticket.Until != tk.Until || d.Ticket.Cell != tk.Cell {
			t.Fatalf("late renewal %d: %v, ticket changed %v (to %v, cell %d), want admitted on the ticket it had (to %v, cell %d)",
				i, d.Outcome, d.TicketChanged, d.Ticket.Until, d.Ticket.Cell, tk.Until, tk.Cell)
		}
	}
	if got := e.LateRenewals(); got != BreakerFailures+3 {
		t.Errorf("LateRenewals %d, want %d", got, BreakerFailures+3)
	}
	if e.StoreDown() || e.StoreErrors() != 0 {
		t.Errorf("after late renewals: store down %v, %d store errors, want up with none", e.StoreDown(), e.StoreErrors())
	}
	// Past its end the session is over: the visitor is a new one.
	if d := decide(t, e, &room, &tk, tk.Until); d.Ticket.VisitorID == tk.VisitorID {
		t.Errorf("at the session's end: the same visitor %v, want a new one", d.Outcome)
	}

	// A store that is down, whose renewals fail or are given up at their
	// By in turn: the late ones do not hide the failures from the breaker.
	e2 := New(&lateStore{Store: st, fail: true}, Options{Rand: rand.New(rand.NewPCG(7, 8)).Uint64, CellSlack: slack})
	b := decide(t, e2, &room, nil, t0)
	if b.Outcome != usher.Admit {
		t.Fatalf("second engine's visitor: %v", b.Outcome)
	}
	tb := b.Ticket
	for i := range 2*BreakerFailures - 1 {
		decide(t, e2, &room, &tb, tb.Until.Add(-time.Duration(10+i)*time.Millisecond))
	}
	if !e2.StoreDown() || e2.StoreErrors() != BreakerFailures {
		t.Errorf("after %d failed renewals with late ones between: store down %v, %d store errors, want down after %d",
			BreakerFailures, e2.StoreDown(), e2.StoreErrors(), BreakerFailures)
	}
}
