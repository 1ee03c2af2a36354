package admission

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// flakyStore is the embedded store with a switch that makes its calls
// fail as an unreachable shared store does.
type flakyStore struct {
	usher.Store
	down   bool
	admits int
}

var errDown = usher.Errorf(usher.EUnavailable, "store: connection refused")

func (f *flakyStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	f.admits++
	if f.down {
		return usher.AdmitResult{}, errDown
	}
	return f.Store.Admit(ctx, room, op)
}

func (f *flakyStore) Renew(ctx context.Context, room string, op usher.RenewOp) (usher.RenewResult, error) {
	if f.down {
		return usher.RenewResult{}, errDown
	}
	return f.Store.Renew(ctx, room, op)
}

func (f *flakyStore) Peek(ctx context.Context, room string, now time.Time, bucket int64) (int64, usher.RoomStats, error) {
	if f.down {
		return 0, usher.RoomStats{}, errDown
	}
	return f.Store.Peek(ctx, room, now, bucket)
}

func newFlaky(t *testing.T, open bool) (*Engine, *flakyStore) {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &flakyStore{Store: st}
	return New(f, Options{FailOpen: open, Rand: newRand(1)}), f
}

func TestFailClosed(t *testing.T) {
	e, f := newFlaky(t, false)
	room := simRoom()
	room.TotalActiveUsers = 1
	in := decide(t, e, &room, nil, t0).Ticket
	waiter := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	f.down = true
	now := t0.Add(2 * time.Second)
	d := decide(t, e, &room, nil, now)
	if d.Outcome != usher.Wait || !d.Degraded || d.Position != 0 || d.WaitKnown || !d.TicketChanged {
		t.Fatalf("new visitor while the store is down: %+v", d)
	}
	if w := decide(t, e, &room, &waiter, now); w.Outcome != usher.Wait || w.TicketChanged {
		t.Fatalf("waiter while the store is down: %v changed=%v, want waiting with its ticket kept", w.Outcome, w.TicketChanged)
	}
	if a := decide(t, e, &room, &in, now); a.Outcome != usher.Admit {
		t.Fatalf("admitted visitor while the store is down: %v, want its session kept", a.Outcome)
	}
	decide(t, e, &room, nil, now) // a third failure opens the breaker
	if !e.StoreDown() || e.FailModeDecisions() != 3 {
		t.Fatalf("store down %v, fail-mode decisions %d", e.StoreDown(), e.FailModeDecisions())
	}
	// Back up: the waiter keeps its place ahead of a newcomer.
	f.down = false
	later := now.Add(BreakerCooldown)
	if d := decide(t, e, &room, &waiter, later); d.Position != 1 {
		t.Fatalf("waiter after recovery: position %d, want 1", d.Position)
	}
	if d := decide(t, e, &room, nil, later); d.Position != 2 {
		t.Fatalf("newcomer after recovery: position %d, want 2", d.Position)
	}
	if e.StoreDown() {
		t.Fatal("still down after a successful call")
	}
}

func TestFailOpenCountsOnceBack(t *testing.T) {
	e, f := newFlaky(t, true)
	room := simRoom()
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	f.down = true
	d := decide(t, e, &room, nil, t0.Add(time.Second))
	if d.Outcome != usher.Admit || !d.Degraded || d.Ticket.Cell != 0 {
		t.Fatalf("fail open: %+v, want admitted uncounted", d)
	}
	tk := d.Ticket
	f.down = false
	// Its next request renews the session and counts it: the room is now
	// over its limit, and nobody else goes in until it is back under.
	now := t0.Add(2 * time.Second)
	r := decide(t, e, &room, &tk, now)
	if r.Outcome != usher.Admit || !r.TicketChanged || r.Ticket.Cell == 0 {
		t.Fatalf("renewal after recovery: %+v", r)
	}
	st, _ := e.Status(context.Background(), &room, now)
	if st.Active != 2 {
		t.Fatalf("active after the fail-open visitor renewed: %d, want 2", st.Active)
	}
	if w := decide(t, e, &room, nil, now); w.Outcome != usher.Wait {
		t.Fatal("a new visitor got in while the room is over its limit")
	}
}

func TestBreakerStopsCallingTheStore(t *testing.T) {
	e, f := newFlaky(t, false)
	room := simRoom()
	f.down = true
	for i := range 20 {
		decide(t, e, &room, nil, t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	if f.admits != BreakerFailures {
		t.Fatalf("store called %d times during the outage, want %d then none until the cooldown", f.admits, BreakerFailures)
	}
	// After the cooldown one call probes.
	decide(t, e, &room, nil, t0.Add(BreakerCooldown+time.Second))
	if f.admits != BreakerFailures+1 {
		t.Fatalf("store calls after the cooldown: %d, want one probe", f.admits)
	}
}

func TestOtherStoreErrorsAreErrors(t *testing.T) {
	st, _ := local.Open(local.Options{})
	defer st.Close()
	boom := errors.New("boom")
	e := New(errStore{st, boom}, Options{})
	room := simRoom()
	if _, err := e.Decide(context.Background(), &room, usher.Visit{Ticket: nil, Now: t0}); !errors.Is(err, boom) {
		t.Fatalf("a store bug: %v, want the error", err)
	}
}

type errStore struct {
	usher.Store
	err error
}

func (s errStore) Admit(context.Context, string, usher.AdmitOp) (usher.AdmitResult, error) {
	return usher.AdmitResult{}, s.err
}

// TestFailedRenewalKeepsTheCountedEnd: a renewal the store cannot take is
// not given: the ticket keeps the session end its count covers, so nobody
// holds a session the room does not count.
func TestFailedRenewalKeepsTheCountedEnd(t *testing.T) {
	e, f := newFlaky(t, false)
	room := simRoom() // 15 s sessions
	room.TotalActiveUsers = 1
	tk := decide(t, e, &room, nil, t0).Ticket
	f.down = true
	d := decide(t, e, &room, &tk, t0.Add(5*time.Second))
	if d.Outcome != usher.Admit || d.TicketChanged || !d.Ticket.Until.Equal(tk.Until) {
		t.Fatalf("renewal while the store is down: %+v, want the session kept as it was", d)
	}
	f.down = false
	if st, _ := e.Status(context.Background(), &room, tk.Until.Add(-time.Second)); st.Active != 1 {
		t.Fatalf("a second before the session's end: active %d, want 1", st.Active)
	}
	if d := decide(t, e, &room, &tk, tk.Until); d.Outcome == usher.Admit && !d.NewlyAdmitted {
		t.Fatal("the session outlived its counted end")
	}
}

// TestOnBreaker: the hook hears the breaker open once, after the failures
// that open it, and close once, at the first store call that works.
func TestOnBreaker(t *testing.T) {
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	f := &flakyStore{Store: st}
	type change struct {
		open bool
		err  error
	}
	var got []change
	e := New(f, Options{Rand: newRand(1), OnBreaker: func(open bool, err error) { got = append(got, change{open, err}) }})
	room := simRoom()
	f.down = true
	for i := range BreakerFailures + 2 {
		decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond))
	}
	if len(got) != 1 || !got[0].open || !errors.Is(got[0].err, errDown) {
		t.Fatalf("changes after %d failures = %+v, want one opening with the store's error", BreakerFailures+2, got)
	}
	f.down = false
	decide(t, e, &room, nil, t0.Add(BreakerCooldown+time.Second))
	decide(t, e, &room, nil, t0.Add(BreakerCooldown+2*time.Second))
	if len(got) != 2 || got[1].open {
		t.Fatalf("changes once the store works = %+v, want the opening then one closing", got)
	}
}
