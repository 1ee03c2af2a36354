package admission

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// tally is an Observer that keeps what it is told.
type tally struct {
	mu  sync.Mutex
	obs []Observation
}

func (t *tally) Observe(room string, o Observation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room != "sale" {
		panic("observed room " + room)
	}
	t.obs = append(t.obs, o)
}

func (t *tally) count(w Happening) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, o := range t.obs {
		if o.What == w {
			n++
		}
	}
	return n
}

func (t *tally) of(w Happening) []Observation {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []Observation
	for _, o := range t.obs {
		if o.What == w {
			out = append(out, o)
		}
	}
	return out
}

func observedEngine(t *testing.T) (*Engine, *tally) {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tl := &tally{}
	return New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, Observer: tl}), tl
}

// TestObserveAdmissionOncePerVisitor: a visitor is one arrival and one
// admission however many requests it makes, and its time in queue is
// zero when it goes in at once.
func TestObserveAdmissionOncePerVisitor(t *testing.T) {
	e, tl := observedEngine(t)
	room := simRoom()
	room.SessionDuration = time.Hour
	for v := range 11 {
		now := t0.Add(time.Duration(v) * time.Second)
		d := decide(t, e, &room, nil, now)
		if d.Outcome != usher.Admit {
			t.Fatalf("visitor %d: %v", v, d.Outcome)
		}
		tk := d.Ticket
		for i := range 30 {
			d := decide(t, e, &room, &tk, now.Add(time.Duration(i)*100*time.Millisecond))
			if d.Outcome != usher.Admit {
				t.Fatalf("visitor %d request %d: %v", v, i, d.Outcome)
			}
			if d.TicketChanged {
				tk = d.Ticket
			}
		}
	}
	if n := tl.count(Arrived); n != 11 {
		t.Errorf("arrivals = %d, want 11", n)
	}
	if n := tl.count(Admitted); n != 11 {
		t.Errorf("admissions = %d, want 11", n)
	}
	for _, o := range tl.of(Admitted) {
		if o.Queued != 0 || o.Announced != 0 {
			t.Errorf("admitted at once: queued %v, announced %v; want 0", o.Queued, o.Announced)
		}
	}
}

// TestObserveQueuedWaiter: a waiter's first page with a known estimate
// writes the announced admission time into its ticket; its admission is
// observed once with its time in queue and that announcement, and the
// admitted ticket no longer carries it.
func TestObserveQueuedWaiter(t *testing.T) {
	e, tl := observedEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	room.SessionDuration = 20 * time.Second
	first := decide(t, e, &room, nil, t0)
	if first.Outcome != usher.Admit {
		t.Fatal(first.Outcome)
	}
	arrive := t0.Add(time.Second)
	d := decide(t, e, &room, nil, arrive)
	if d.Outcome != usher.Wait {
		t.Fatal(d.Outcome)
	}
	tk := d.Ticket
	var announced time.Duration
	now := arrive
	for d.Outcome == usher.Wait {
		if announced == 0 && d.WaitKnown {
			announced = d.Ticket.Announced
			if want := now.Add(d.EstimatedWait).Sub(d.Ticket.ArrivedAt).Truncate(time.Millisecond); announced != want {
				t.Fatalf("announced %v, want the wait to now + estimate %v", announced, want)
			}
		} else if announced != 0 && d.Ticket.Announced != announced {
			t.Fatalf("announced moved from %v to %v", announced, d.Ticket.Announced)
		}
		now = tk.NextCheckIn
		if now.Sub(arrive) > time.Minute {
			t.Fatal("still waiting after a minute")
		}
		d = decide(t, e, &room, &tk, now)
		tk = d.Ticket
	}
	if d.Outcome != usher.Admit || !d.NewlyAdmitted {
		t.Fatalf("outcome %v, newly %v", d.Outcome, d.NewlyAdmitted)
	}
	if announced == 0 {
		t.Fatal("no waiting page announced a wait")
	}
	if d.Ticket.Announced != 0 {
		t.Errorf("admitted ticket still carries Announced %v", d.Ticket.Announced)
	}
	adm := tl.of(Admitted)
	if len(adm) != 2 {
		t.Fatalf("admissions = %d, want 2", len(adm))
	}
	if got, want := adm[1].Queued, now.Sub(arrive.Truncate(time.Millisecond)); got != want {
		t.Errorf("queued %v, want %v", got, want)
	}
	if got, want := adm[1].Announced, announced; got != want {
		t.Errorf("announced wait %v, want %v", got, want)
	}
	if n := tl.count(Arrived); n != 2 {
		t.Errorf("arrivals = %d, want 2", n)
	}
}

// TestObserveSessionEnds: a revoke is observed once; an admitted visitor
// back after its session ended is observed as ended with its time on the
// origin (to its last counted activity).
func TestObserveSessionEnds(t *testing.T) {
	e, tl := observedEngine(t)
	room := simRoom()
	room.SessionDuration = 10 * time.Second
	d := decide(t, e, &room, nil, t0)
	tk := d.Ticket
	for i := 1; i <= 8; i++ {
		if d = decide(t, e, &room, &tk, t0.Add(time.Duration(i)*time.Second)); d.TicketChanged {
			tk = d.Ticket
		}
	}
	onOrigin := tk.CountedAt.Sub(tk.AdmittedAt)
	if onOrigin <= 0 {
		t.Fatalf("renewals did not move CountedAt (%v)", onOrigin)
	}
	decide(t, e, &room, &tk, tk.Until.Add(time.Second))
	ended := tl.of(Ended)
	if len(ended) != 1 || ended[0].OnOrigin != onOrigin {
		t.Fatalf("ended = %+v, want one with OnOrigin %v", ended, onOrigin)
	}
	other := decide(t, e, &room, nil, t0.Add(30*time.Second)).Ticket
	if _, err := e.Revoke(context.Background(), &room, other.VisitorID, t0.Add(31*time.Second)); err != nil {
		t.Fatal(err)
	}
	if n := tl.count(Revoked); n != 1 {
		t.Errorf("revoked = %d, want 1", n)
	}
	// The revoked visitor's ticket comes back: refused, not an ended session.
	decide(t, e, &room, &other, t0.Add(32*time.Second))
	if n := tl.count(Ended); n != 1 {
		t.Errorf("ended = %d after a revoked ticket came back, want 1", n)
	}
}

// TestObserveAllocatesNothing: telling an observer allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	var n int
	var ob Observer = Observers{countObs{&n}}
	e := &Engine{opts: Options{Observer: ob}}
	tk := usher.Ticket{ArrivedAt: t0, Announced: time.Minute}
	allocs := testing.AllocsPerRun(100, func() {
		e.observe("sale", Observation{What: Arrived, At: t0})
		e.observeAdmitted("sale", &tk, t0.Add(time.Minute))
	})
	if allocs != 0 || n == 0 {
		t.Errorf("allocs per run = %v (observed %d)", allocs, n)
	}
}

type countObs struct{ n *int }

func (c countObs) Observe(string, Observation) { *c.n++ }
