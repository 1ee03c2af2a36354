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
	lose  int // the next lose Admit calls that change something are applied and then fail
	lost  []usher.AdmitResult
	admit int
	// applied counts, per visitor, the Admit calls that changed something
	// (not replays); draws, per visitor and draw window, those that drew.
	applied map[[8]byte]int
	draws   map[drawKey]int
	took    int // takeovers
}

type drawKey struct {
	v   [8]byte
	win int64
}

var errTimedOut = usher.Errorf(usher.EUnavailable, "redis: admit: unreachable: context deadline exceeded")

func (l *lossyStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	l.admit++
	res, err := l.Store.Admit(ctx, room, op)
	if err == nil && !res.Replay {
		l.applied[op.Visitor]++
		if op.Random {
			l.draws[drawKey{op.Visitor, op.Now.UnixMilli() / 2000}]++
		}
		if res.TookOver {
			l.took++
		}
	}
	if err == nil && !res.Replay && l.lose > 0 {
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
	l := &lossyStore{Store: st, applied: map[[8]byte]int{}, draws: map[drawKey]int{}}
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
	if st.took != 1 || e.LostAnswers() != 1 {
		t.Fatalf("%d takeovers, LostAnswers %d; want 1 and 1", st.took, e.LostAnswers())
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
	if e.LostAnswers() != 1 {
		t.Fatalf("LostAnswers %d, want the one delivered admission", e.LostAnswers())
	}
}

// line is honest waiters, each checking in when its page tells it.
type line []*page

func newLine(t *testing.T, e *Engine, room *usher.Room, n int, at time.Time) line {
	var l line
	for j := range n {
		p := &page{tk: decide(t, e, room, nil, at.Add(time.Duration(j)*time.Millisecond)).Ticket}
		p.next = p.tk.NextCheckIn
		l = append(l, p)
	}
	return l
}

func (l line) step(t *testing.T, e *Engine, room *usher.Room, now time.Time) {
	for _, p := range l {
		if p.in.IsZero() && !now.Before(p.next) {
			p.step(t, e, room, now)
		}
	}
}

// hoarder is an attacking client that keeps every ticket it was ever
// given and presents all of them, each time it polls.
type hoarder struct {
	tks  []usher.Ticket
	seen map[time.Time]bool
	in   map[time.Time]bool // the admissions (AdmittedAt) its tickets carried
}

func newHoarder(tk usher.Ticket) *hoarder {
	return &hoarder{tks: []usher.Ticket{tk}, seen: map[time.Time]bool{tk.CountedAt: true}, in: map[time.Time]bool{}}
}

func (h *hoarder) poll(t *testing.T, e *Engine, room *usher.Room, now time.Time) {
	t.Helper()
	for i := range h.tks {
		tk := h.tks[i]
		d := decide(t, e, room, &tk, now)
		if d.Outcome == usher.Admit {
			h.in[d.Ticket.AdmittedAt] = true
		}
		if d.TicketChanged && !h.seen[d.Ticket.CountedAt] {
			h.seen[d.Ticket.CountedAt] = true
			h.tks = append(h.tks, d.Ticket)
		}
	}
}

// TestHoardedTicketsCountNoMoreThanOne: a client that keeps every ticket
// it was given and presents all of them every 100 ms (the ticket before
// the latest among them, which may take the record over) is counted no
// more often than a client polling as fast with its latest ticket alone
// (TestFastPollingCountsLittleMore), in a line it waits in for a minute
// near the front (1 s intervals) and far back (intervals that grow), with
// an answer lost every 10 s.
func TestHoardedTicketsCountNoMoreThanOne(t *testing.T) {
	for _, far := range []bool{false, true} {
		counted := [2]int{}
		for i, hoard := range []bool{false, true} {
			e, st := newLossy(t)
			room := lostRoom(2 * time.Second)
			room.SessionDuration = time.Hour
			room.MaxRefreshInterval = 30 * time.Second
			decide(t, e, &room, nil, t0)
			var ahead line
			if far {
				ahead = newLine(t, e, &room, 300, t0)
			}
			tk := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
			h := newHoarder(tk)
			for now := t0.Add(time.Second); now.Before(t0.Add(61 * time.Second)); now = now.Add(100 * time.Millisecond) {
				ahead.step(t, e, &room, now)
				if now.Sub(t0)%(10*time.Second) == 0 {
					st.lose = 1
				}
				if hoard {
					h.poll(t, e, &room, now)
					continue
				}
				if d := decide(t, e, &room, &tk, now); d.TicketChanged {
					tk = d.Ticket
				}
			}
			counted[i] = st.applied[tk.VisitorID]
			t.Logf("far back %v, hoarding %v: %d tickets, %d takeovers, %d answers lost", far, hoard, len(h.tks), st.took, len(st.lost))
			if st.took == 0 {
				t.Fatal("no takeover: the test must exercise them")
			}
		}
		t.Logf("far back %v: counted %d times polling with its latest ticket, %d with every ticket", far, counted[0], counted[1])
		if counted[1] > counted[0] {
			t.Fatalf("far back %v: presenting every ticket was counted %d times in 60 s, more than the %d of the latest ticket alone", far, counted[1], counted[0])
		}
	}
}

// TestCopiesAlternatingGainNothing: copies of one place on two clients,
// each following its own cookie and checking in when told or up to 4 s
// later, take turns (each presents its ticket while the other's is the
// store's record, and the ticket one behind takes the record over when
// the other copy is late).
// Between them they are counted no more often than one page, get one
// admission (the same session on both), and do not pass the waiter ahead.
func TestCopiesAlternatingGainNothing(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	decide(t, e, &room, nil, t0) // holds the room until +10 s
	ahead := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
	ahead.next = ahead.tk.NextCheckIn
	place := decide(t, e, &room, nil, t0.Add(2*time.Second)).Ticket
	copies := []*page{{tk: place, next: place.NextCheckIn}, {tk: place, next: place.NextCheckIn.Add(900 * time.Millisecond)}}
	honest := &page{tk: place, next: place.NextCheckIn} // the same place, one page, in a room of its own
	e2, st2 := newLossy(t)
	decide(t, e2, &room, nil, t0)
	aheadOwn := &page{tk: decide(t, e2, &room, nil, t0.Add(time.Second)).Ticket}
	aheadOwn.next = aheadOwn.tk.NextCheckIn
	honest.tk = decide(t, e2, &room, nil, t0.Add(2*time.Second)).Ticket
	honest.next = honest.tk.NextCheckIn
	rng := newRand(7)
	for now := t0.Add(2 * time.Second); now.Before(t0.Add(50 * time.Second)); now = now.Add(100 * time.Millisecond) {
		if !now.Before(ahead.next) {
			ahead.step(t, e, &room, now)
		}
		for _, p := range copies {
			if now.Before(p.next) || !p.in.IsZero() {
				continue
			}
			p.step(t, e, &room, now)
			p.next = p.next.Add(time.Duration(rng()%4000) * time.Millisecond)
		}
		for _, p := range []*page{aheadOwn, honest} {
			if !now.Before(p.next) && p.in.IsZero() {
				p.step(t, e2, &room, now)
			}
		}
	}
	both := st.applied[place.VisitorID]
	one := st2.applied[honest.tk.VisitorID]
	t.Logf("two alternating copies counted %d times (%d takeovers), one page %d; in at +%v/+%v, ahead at +%v",
		both, st.took, one, copies[0].in.Sub(t0), copies[1].in.Sub(t0), ahead.in.Sub(t0))
	if both > one+1 {
		t.Fatalf("two alternating copies were counted %d times, one page %d", both, one)
	}
	if st.took == 0 {
		t.Fatal("no takeover: the copies must present a ticket the record was counted from")
	}
	if ahead.in.IsZero() || (!copies[0].in.IsZero() && copies[0].in.Before(ahead.in)) || (!copies[1].in.IsZero() && copies[1].in.Before(ahead.in)) {
		t.Fatalf("a copy went in (+%v, +%v) before the waiter ahead (+%v)", copies[0].in.Sub(t0), copies[1].in.Sub(t0), ahead.in.Sub(t0))
	}
	if n := copies[0].newly + copies[1].newly; n != 1 {
		t.Fatalf("the copies got %d admissions, want 1", n)
	}
	if !copies[0].in.IsZero() && !copies[1].in.IsZero() && !copies[0].tk.AdmittedAt.Equal(copies[1].tk.AdmittedAt) {
		t.Fatalf("the copies hold two sessions: admitted at %v and %v", copies[0].tk.AdmittedAt, copies[1].tk.AdmittedAt)
	}
	if s, _ := e.Status(context.Background(), &room, t0.Add(50*time.Second)); s.Active > 1 {
		t.Fatalf("active %d in a room of one", s.Active)
	}
}

// TestHeldBackCopyTakesNothing: while the original checks in as its page
// tells it, copies of each of its earlier tickets, held back and presented
// after it moved on, are never counted: the ticket one answer behind only
// takes the record over once the visitor has stopped checking in for a
// whole interval, and the older ones never. A ticket from long ago (the
// arrival's, 9 minutes back) takes nothing over either, and once it is
// older than MaxAbsence it is a new visitor at the back of the line.
func TestHeldBackCopyTakesNothing(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	room.SessionDuration = time.Hour
	room.MaxRefreshInterval = 20 * time.Second
	decide(t, e, &room, nil, t0)           // holds the room for an hour
	ahead := newLine(t, e, &room, 300, t0) // a line ahead: intervals grow
	orig := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
	orig.next = orig.tk.NextCheckIn
	arrival := orig.tk
	var held []usher.Ticket // the tickets the original moved on from
	var heldChecks int
	for now := t0.Add(time.Second); now.Before(t0.Add(9 * time.Minute)); now = now.Add(250 * time.Millisecond) {
		ahead.step(t, e, &room, now)
		if !now.Before(orig.next) {
			before := orig.tk
			d := orig.step(t, e, &room, now)
			if d.Replay {
				t.Fatalf("the original's check-in at +%v was a replay: a held-back copy took its record over", now.Sub(t0))
			}
			held = append(held, before)
		}
		applied := st.applied[orig.tk.VisitorID]
		for i := range held {
			decide(t, e, &room, &held[i], now)
			heldChecks++
		}
		if st.applied[orig.tk.VisitorID] != applied {
			t.Fatalf("a held-back copy was counted at +%v", now.Sub(t0))
		}
	}
	t.Logf("%d presentations of %d held-back tickets, none counted", heldChecks, len(held))
	// The visitor stops; its arrival's ticket, the oldest, still takes
	// nothing over.
	last := st.applied[orig.tk.VisitorID]
	for now := t0.Add(9 * time.Minute); now.Before(t0.Add(time.Second + MaxAbsence(room.RefreshInterval))); now = now.Add(5 * time.Second) {
		if d := decide(t, e, &room, &arrival, now); d.TicketChanged {
			t.Fatalf("the arrival's ticket, presented at +%v, was counted: %+v", now.Sub(t0), d.Ticket)
		}
	}
	if st.applied[orig.tk.VisitorID] != last {
		t.Fatal("the arrival's ticket was counted")
	}
	late := t0.Add(2*time.Second + MaxAbsence(room.RefreshInterval))
	d := decide(t, e, &room, &arrival, late)
	if d.Ticket.VisitorID == orig.tk.VisitorID || !d.Ticket.ArrivedAt.Equal(late) {
		t.Fatalf("the arrival's ticket after MaxAbsence: visitor %x arrived %v at %d, want a new visitor at the back", d.Ticket.VisitorID, d.Ticket.ArrivedAt, d.Position)
	}
}

// TestRandomTakeOverDrawsOncePerWindow: in a random room, a client that
// presents every ticket it was given (among them the one whose answer it
// never got) draws at most once in each draw window.
func TestRandomTakeOverDrawsOncePerWindow(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	room.QueueingMethod = usher.Random
	room.SessionDuration = time.Hour
	decide(t, e, &room, nil, t0)
	for j := range 50 {
		decide(t, e, &room, nil, t0.Add(time.Duration(j)*time.Millisecond))
	}
	tk := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	h := newHoarder(tk)
	for now := t0.Add(time.Second); now.Before(t0.Add(2 * time.Minute)); now = now.Add(100 * time.Millisecond) {
		if now.Sub(t0)%(10*time.Second) == 0 {
			st.lose = 1 // now and then an answer is lost
		}
		h.poll(t, e, &room, now)
	}
	draws := 0
	for k, n := range st.draws {
		if k.v != tk.VisitorID {
			continue
		}
		draws += n
		if n > 1 {
			t.Fatalf("%d draws in the window at +%v", n, time.UnixMilli(k.win*2000).Sub(t0))
		}
	}
	t.Logf("%d tickets, %d draws in 2 minutes (60 windows), %d takeovers, %d answers lost", len(h.tks), draws, st.took, len(st.lost))
	if st.took == 0 || draws < 40 {
		t.Fatalf("%d takeovers, %d draws: the test must exercise takeovers and draws", st.took, draws)
	}
}

// TestCopiesOfALostAdmissionShareOneSession: an admission whose answer was
// lost; twenty copies of the ticket it was counted from, presented over
// the session, all get that one session (as copies of the admitted cookie
// would): one admission, the room's count 1.
func TestCopiesOfALostAdmissionShareOneSession(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	room.SessionDuration = time.Minute
	decide(t, e, &room, nil, t0)
	w := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	now := t0.Add(time.Minute)
	counts := st.applied[w.VisitorID] // its arrival
	st.lose = 1
	if d := decide(t, e, &room, &w, now); d.Outcome != usher.Wait || len(st.lost) != 1 || !st.lost[0].Admitted {
		t.Fatalf("the lost admission: %v, %+v", d.Outcome, st.lost)
	}
	for i := range 20 {
		at := now.Add(time.Duration(i) * 2 * time.Second)
		d := decide(t, e, &room, &w, at)
		if d.Outcome != usher.Admit || d.NewlyAdmitted || !d.Ticket.AdmittedAt.Equal(st.lost[0].Record.At) {
			t.Fatalf("copy %d at +%v: %v newly %v admitted %v, want the counted session", i, at.Sub(now), d.Outcome, d.NewlyAdmitted, d.Ticket.AdmittedAt)
		}
		if s, _ := e.Status(context.Background(), &room, at); s.Active != 1 || s.AdmittedLastMinute > 2 {
			t.Fatalf("copy %d: %+v, want one session", i, s)
		}
	}
	// Once the session has ended, a copy is a new visitor (here, in an
	// empty room, admitted as one).
	end := now.Add(room.SessionDuration + 2*time.Second)
	if d := decide(t, e, &room, &w, end); d.Ticket.VisitorID == w.VisitorID {
		t.Fatalf("a copy after the session ended: %v as the same visitor", d.Outcome)
	}
	if n := st.applied[w.VisitorID] - counts; n != 1 {
		t.Fatalf("%d counts, want the one admission", n)
	}
}

// TestLapsedLostAdmissionStartsOver: an admission whose answer was lost
// and whose session ended before the visitor came back (a store that
// stayed unreachable, a page left in the background) is not given again:
// the ticket it was counted from starts over as a new visitor, behind
// everyone waiting, as the admitted ticket would have (before: it waited
// MaxAbsence in a line that never admitted it).
func TestLapsedLostAdmissionStartsOver(t *testing.T) {
	e, st := newLossy(t)
	room := lostRoom(2 * time.Second)
	decide(t, e, &room, nil, t0)
	w := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	now := t0.Add(10 * time.Second) // the filler's session has ended
	st.lose = 1
	if d := decide(t, e, &room, &w, now); d.Outcome != usher.Wait || len(st.lost) != 1 || !st.lost[0].Admitted {
		t.Fatalf("the lost admission: %v, %+v", d.Outcome, st.lost)
	}
	later := now.Add(room.SessionDuration + 2*time.Second)
	decide(t, e, &room, nil, later.Add(-2*time.Second))                // the slot is taken again
	behind := decide(t, e, &room, nil, later.Add(-time.Second)).Ticket // arrived while it was away
	d := decide(t, e, &room, &w, later)
	if d.Outcome != usher.Wait || d.NewlyAdmitted || d.Replay {
		t.Fatalf("the ticket of a lapsed lost admission: %v newly %v replay %v, want a new visitor waiting", d.Outcome, d.NewlyAdmitted, d.Replay)
	}
	if e.LostAnswers() != 1 {
		t.Fatalf("LostAnswers %d, want 1", e.LostAnswers())
	}
	if d.Ticket.VisitorID == w.VisitorID || !d.Ticket.ArrivedAt.Equal(later) || d.Position != 2 {
		t.Fatalf("it starts over as visitor %x arrived %v at place %d, want a new visitor behind %x", d.Ticket.VisitorID, d.Ticket.ArrivedAt, d.Position, behind.VisitorID)
	}
	// Copies of that ticket start over too: none is admitted ahead of the
	// waiter who arrived while it was away.
	for i := range 5 {
		if d := decide(t, e, &room, &w, later.Add(time.Duration(i)*time.Second)); d.Outcome == usher.Admit {
			t.Fatalf("copy %d admitted ahead of the waiter", i)
		}
	}
}

// TestLostAnswerLeavesNoGap: a page whose check-in answer was lost comes
// back a refresh interval after the failure reached it (a store timeout of
// up to 1.5 s later) and takes the record over before the record's cell
// expires: the waiter is counted without a gap, so nobody behind it passes
// it meanwhile. 40 jitters at each of three refresh intervals.
func TestLostAnswerLeavesNoGap(t *testing.T) {
	for _, failAfter := range []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond} {
		for _, r := range []time.Duration{2 * time.Second, 5 * time.Second, 20 * time.Second} {
			for seed := range uint64(40) {
				e, st := newLossy(t)
				e.rng = newRand(seed + 100)
				room := lostRoom(r)
				room.SessionDuration = time.Hour
				decide(t, e, &room, nil, t0)
				p := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
				lostAt := p.tk.NextCheckIn
				st.lose = 1
				p.step(t, e, &room, lostAt)
				if len(st.lost) != 1 {
					t.Fatal("the check-in's answer was not lost")
				}
				p.next = p.next.Add(failAfter) // the failure reaches the page late
				for now := lostAt; now.Before(lostAt.Add(3 * r)); now = now.Add(100 * time.Millisecond) {
					if !now.Before(p.next) {
						p.step(t, e, &room, now)
					}
					if s, _ := e.Status(context.Background(), &room, now); s.Waiting != 1 {
						t.Fatalf("refresh %v, failure after %v, jitter %v: %d waiting at +%v after the lost answer, want the waiter counted throughout",
							r, failAfter, p.tk.Jitter, s.Waiting, now.Sub(lostAt))
					}
				}
				if st.took != 1 {
					t.Fatalf("refresh %v, failure after %v: %d takeovers, want 1", r, failAfter, st.took)
				}
			}
		}
	}
}

// TestLostRenewalAnswerRenewsFromTheRetry: a renewal the store applied
// but whose answer never reached the visitor (the node died after the
// commit, a call that timed out after Redis ran it) leaves the visitor
// with the ticket before it. Its next request is served as admitted and
// must renew the session from that request, as every admitted request
// does: session_duration after it, not after the lost renewal (before: it
// got the lost renewal's end, shorter by the time the answer was lost, so
// a visitor who stopped there lost part of its session and the load
// generator, which counts a session from its last request, saw one active
// user more than the room held).
func TestLostRenewalAnswerRenewsFromTheRetry(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	in := decide(t, e, &room, nil, t0)
	if in.Outcome != usher.Admit {
		t.Fatal("the visitor was not admitted")
	}
	tk := in.Ticket
	if d := decide(t, e, &room, &tk, t0.Add(5*time.Second)); !d.TicketChanged || d.Ticket.Until.Before(t0.Add(20*time.Second)) {
		t.Fatalf("the renewal at +5s: changed %v until %v", d.TicketChanged, d.Ticket.Until.Sub(t0))
	}
	// The answer carrying that renewal is lost: the visitor comes back
	// with its old ticket.
	retry := t0.Add(9 * time.Second)
	d := decide(t, e, &room, &tk, retry)
	if d.Outcome != usher.Admit {
		t.Fatalf("the retry: %v, want admitted", d.Outcome)
	}
	if want := retry.Add(room.SessionDuration); d.Ticket.Until.Before(want) {
		t.Fatalf("the retry's session ends at +%v, want at least +%v (session_duration after the request)", d.Ticket.Until.Sub(t0), want.Sub(t0))
	}
	for _, at := range []time.Duration{10 * time.Second, 23 * time.Second} {
		if st, _ := e.Status(context.Background(), &room, t0.Add(at)); st.Active != 1 {
			t.Fatalf("active %d at +%v, want the one session", st.Active, at)
		}
	}
	if st, _ := e.Status(context.Background(), &room, d.Ticket.Until.Add(time.Second)); st.Active != 0 {
		t.Fatalf("active %d after the session's end, want 0", st.Active)
	}
}

// TestLostAdmissionDeliveredRenews: an admission whose answer was lost and
// that is delivered to a later check-in is served as admitted: with
// renewal on, its session runs session_duration from that request, as the
// visitor saw it begin then.
func TestLostAdmissionDeliveredRenews(t *testing.T) {
	e, st := newLossy(t)
	room := simRoom()
	room.TotalActiveUsers = 1
	room.RefreshInterval = 10 * time.Second
	decide(t, e, &room, nil, t0)
	p := &page{tk: decide(t, e, &room, nil, t0.Add(time.Second)).Ticket}
	p.next = p.tk.NextCheckIn
	now := t0.Add(16 * time.Second) // the filler's session has ended
	for now.Before(p.next) {
		now = now.Add(time.Second)
	}
	st.lose = 1
	if d := p.step(t, e, &room, now); d.Outcome != usher.Wait || len(st.lost) != 1 || !st.lost[0].Admitted {
		t.Fatalf("the lost admission: %v, lost %+v", d.Outcome, st.lost)
	}
	now = now.Add(ReplayGrace + 3*time.Second)
	d := p.step(t, e, &room, now)
	if d.Outcome != usher.Admit || d.NewlyAdmitted {
		t.Fatalf("the check-in after the lost admission: %v newly %v, want the counted session", d.Outcome, d.NewlyAdmitted)
	}
	if want := now.Add(room.SessionDuration); d.Ticket.Until.Before(want) {
		t.Fatalf("the delivered session ends %v after the request, want at least session_duration (%v)", d.Ticket.Until.Sub(now), room.SessionDuration)
	}
	if s, _ := e.Status(context.Background(), &room, now.Add(time.Second)); s.Active != 1 {
		t.Fatalf("active %d, want 1", s.Active)
	}
	if s, _ := e.Status(context.Background(), &room, d.Ticket.Until.Add(time.Second)); s.Active != 0 {
		t.Fatalf("active %d after the delivered session's end, want 0", s.Active)
	}
}
