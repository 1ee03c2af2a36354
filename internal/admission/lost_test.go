package admission

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// lossyStore is the embedded store whose Admit calls can be made to lose
// their answer: the call is applied, then fails as a shared store's call
// that timed out after the server ran it does.
type lossyStore struct {
	usher.Store
	lose  int // the next lose Admit calls are applied and then fail
	lost  []usher.AdmitResult
	admit int
}

var errTimedOut = usher.Errorf(usher.EUnavailable, "redis: admit: unreachable: context deadline exceeded")

func (l *lossyStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	l.admit++
	res, err := l.Store.Admit(ctx, room, op)
	if err == nil && l.lose > 0 {
		l.lose--
		l.lost = append(l.lost, res)
		return usher.AdmitResult{}, errTimedOut
	}
	return res, err
}

func newLossy(t *testing.T) (*Engine, *lossyStore) {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	l := &lossyStore{Store: st}
	return New(l, Options{Rand: newRand(3)}), l
}

// lostRoom is a room of one whose sessions do not renew, so the test
// knows when the slot frees.
func lostRoom(refresh time.Duration) usher.Room {
	room := simRoom()
	room.TotalActiveUsers = 1
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	room.RefreshInterval = refresh
	return room
}

// page is a waiting page: it checks in when its answer says, keeps any
// new ticket it is given, and keeps its ticket when the answer failed.
type page struct {
	tk   usher.Ticket
	next time.Time
	in   time.Time // when it got in (zero: not yet)
	newly,
	replays int
}

func (p *page) step(t *testing.T, e *Engine, room *usher.Room, now time.Time) usher.Decision {
	t.Helper()
	d := decide(t, e, room, &p.tk, now)
	if d.TicketChanged {
		p.tk = d.Ticket
	}
	if d.Replay {
		p.replays++
	}
	if d.NewlyAdmitted {
		p.newly++
	}
	if d.Outcome == usher.Admit && p.in.IsZero() {
		p.in = now
	}
	p.next = now.Add(max(d.RefreshAfter, time.Second))
	return d
}

// TestLostWaitingAnswerKeepsTheTurn: a check-in the store applied but
// whose answer was lost (a call that timed out after Redis ran it) leaves
// the visitor one ticket behind the store's record. Its next check-ins
// must be counted, and it must go in when its turn comes (before: each
// check-in was a replay; it was never admitted, and after MaxAbsence it
// started over at the back).
func TestLostWaitingAnswerKeepsTheTurn(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Admit {
		t.Fatal("the filler was not admitted")
	}
	p := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
	p.next = p.tk.NextCheckIn
	st.lose = 1
	d := p.step(t, e, &room, p.next)
	if !d.Degraded || len(st.lost) != 1 || st.lost[0].Replay {
		t.Fatalf("the lost check-in: degraded %v, lost %+v", d.Degraded, st.lost)
	}
	// The filler's session ends at t0+10s: the visitor, first in line,
	// goes in at its next check-in after that.
	for now := p.next; p.in.IsZero() && now.Before(t0.Add(time.Minute)); now = now.Add(100 * time.Millisecond) {
		if !now.Before(p.next) {
			p.step(t, e, &room, now)
		}
	}
	if p.in.IsZero() || p.in.After(t0.Add(13*time.Second)) {
		t.Fatalf("a waiter whose check-in answer was lost went in at %v (want by +13s; %d replays)", p.in.Sub(t0), p.replays)
	}
	if p.newly != 1 {
		t.Fatalf("%d admissions, want 1", p.newly)
	}
	if p.replays > 1 {
		t.Fatalf("%d of its check-ins were taken for replays, want at most 1", p.replays)
	}
}

// TestLostAdmissionIsDelivered: an admission the store applied but whose
// answer was lost is delivered to the visitor's next check-in, even one
// that comes after the replay grace (before: the visitor waited on while
// its session's slot was held, unused, to its end).
func TestLostAdmissionIsDelivered(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(10 * time.Second)
	room.SessionDuration = time.Minute
	decide(t, e, &room, nil, t0)
	p := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
	p.next = p.tk.NextCheckIn
	now := t0.Add(time.Minute) // the filler's session has ended
	for now.Before(p.next) {
		now = now.Add(time.Second)
	}
	st.lose = 1
	if d := p.step(t, e, &room, now); d.Outcome != usher.Wait || len(st.lost) != 1 || !st.lost[0].Admitted {
		t.Fatalf("the lost admission: %v, lost %+v", d.Outcome, st.lost)
	}
	lostAt := now
	now = p.next
	if now.Sub(lostAt) <= ReplayGrace {
		t.Fatalf("the next check-in comes %v after the lost admission, within the replay grace", now.Sub(lostAt))
	}
	d := p.step(t, e, &room, now)
	if d.Outcome != usher.Admit {
		t.Fatalf("the check-in %v after a lost admission: %v, want the session the store counted", now.Sub(lostAt), d.Outcome)
	}
	if d.NewlyAdmitted || d.Ticket.AdmittedAt != st.lost[0].Record.At || d.Ticket.Cell != st.lost[0].Record.Cell {
		t.Fatalf("the delivered session: newly %v, admitted %v cell %d; the store counted %+v",
			d.NewlyAdmitted, d.Ticket.AdmittedAt, d.Ticket.Cell, st.lost[0].Record)
	}
	if st, _ := e.Status(context.Background(), &room, now); st.Active != 1 {
		t.Fatalf("active %d, want 1", st.Active)
	}
}
