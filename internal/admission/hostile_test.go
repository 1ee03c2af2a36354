package admission

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// The tests in this file play clients that lie: stockpiled, copied and
// replayed tickets, requests without a cookie, hang-ups, settings that
// change under running sessions. Each was a defect (issue 8) and must fail
// on the engine before its fix.

// TestLongerSessionsReviveNothing: tickets whose sessions ended stay ended
// when a reload or an event lengthens sessions (defect 1: 100 stockpiled
// tickets walked back into a room of 10).
func TestLongerSessionsReviveNothing(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // 15 s sessions
	room.TotalActiveUsers = 10
	room.NewUsersPerMinute = 1000
	var stock []usher.Ticket
	now := t0
	for i := range 100 {
		d := decide(t, e, &room, nil, now)
		if d.Outcome != usher.Admit {
			t.Fatalf("stockpiling visitor %d: %v", i, d.Outcome)
		}
		stock = append(stock, d.Ticket)
		if i%10 == 9 {
			now = now.Add(20 * time.Second) // those sessions end
		}
	}
	for range 10 {
		if d := decide(t, e, &room, nil, now); d.Outcome != usher.Admit {
			t.Fatal("the room did not fill")
		}
	}
	for _, lengthen := range []func(*usher.Room){
		func(r *usher.Room) { r.SessionDuration = time.Hour },                   // a reload
		func(r *usher.Room) { r.DisableSessionRenewal = false },                 // renewal back on
		func(r *usher.Room) { h := 2 * time.Hour; r.Events = eventAt(now, &h) }, // an event
	} {
		r := room
		lengthen(&r)
		for i := range stock {
			if d := decide(t, e, &r, &stock[i], now.Add(time.Second)); d.Outcome == usher.Admit {
				t.Fatalf("stockpiled ticket %d (session ended %v) admitted after sessions grew: newly=%v",
					i, stock[i].Until, d.NewlyAdmitted)
			}
		}
	}
}

// eventAt returns one event running from now on with the session length.
func eventAt(now time.Time, session *time.Duration) []usher.Event {
	return []usher.Event{{Name: "e", Start: now, End: now.Add(time.Hour), Overrides: usher.Overrides{SessionDuration: session}}}
}

// TestShorterSessionsNeverUndercount: sessions shortened under running
// visitors, each sending six parallel requests with its old cookie, leave
// the count at the sessions still running and let nobody in (defect 2:
// Active fell to 0 with 10 sessions running, and 50 more got in).
func TestShorterSessionsNeverUndercount(t *testing.T) {
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := New(st, Options{Rand: newRand(1)})
	room := simRoom()
	room.TotalActiveUsers = 10
	room.NewUsersPerMinute = 1000
	room.SessionDuration = 10 * time.Minute
	var in []usher.Ticket
	for range 10 {
		in = append(in, decide(t, e, &room, nil, t0).Ticket)
	}
	short := 15 * time.Second
	for _, shorten := range []func(*usher.Room){
		func(r *usher.Room) { r.SessionDuration = short },
		func(r *usher.Room) { r.Events = eventAt(t0.Add(time.Minute), &short) },
	} {
		r := room
		shorten(&r)
		for step := range 20 {
			now := t0.Add(time.Minute + time.Duration(step)*3*time.Second)
			for i := range in {
				for range 6 {
					d := decide(t, e, &r, &in[i], now)
					if d.Outcome != usher.Admit {
						t.Fatalf("visitor %d lost its running session at +%v", i, now.Sub(t0))
					}
				}
			}
			for range 5 {
				if d := decide(t, e, &r, nil, now); d.Outcome == usher.Admit {
					s, _ := e.Status(context.Background(), &r, now)
					t.Fatalf("a new visitor admitted at +%v with 10 sessions running in a room of 10 (store: %+v)", now.Sub(t0), s)
				}
			}
		}
	}
	if c := st.Clamped("sale"); c != 0 {
		t.Fatalf("%d decrements found nothing to take: a count was taken twice", c)
	}
}

// TestReplayedWaitingTicketAdmittedOnce: one waiting ticket replayed ten
// times a second gets one admission, and the honest waiters behind it are
// not passed (defect 3: 108 admissions in 110 s while 30 honest waiters
// got 1).
func TestReplayedWaitingTicketAdmittedOnce(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // 2 s refresh
	room.TotalActiveUsers = 1
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	decide(t, e, &room, nil, t0) // holds the room until +10 s
	copied := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	type waiter struct {
		tk usher.Ticket
		in time.Time
	}
	var honest []*waiter
	for i := range 30 {
		honest = append(honest, &waiter{tk: decide(t, e, &room, nil, t0.Add(2*time.Second+time.Duration(i)*10*time.Millisecond)).Ticket})
	}
	attackerIn := 0
	var firstHonest time.Time
	for now := t0.Add(2 * time.Second); now.Before(t0.Add(110 * time.Second)); now = now.Add(100 * time.Millisecond) {
		// The attacker presents the same ticket ten times a second.
		if d := decide(t, e, &room, &copied, now); d.NewlyAdmitted {
			attackerIn++
		} else if d.Outcome == usher.Admit && !d.Replay {
			t.Fatalf("the copied ticket got in without an admission at +%v", now.Sub(t0))
		}
		for _, w := range honest {
			if !w.in.IsZero() || now.Before(w.tk.NextCheckIn) {
				continue
			}
			d := decide(t, e, &room, &w.tk, now)
			w.tk = d.Ticket
			if d.Outcome == usher.Admit {
				w.in = now
				if firstHonest.IsZero() {
					firstHonest = now
				}
			}
		}
	}
	if attackerIn > 1 {
		t.Fatalf("one waiting ticket replayed 10/s got %d admissions in 110 s, want at most 1", attackerIn)
	}
	in := 0
	for _, w := range honest {
		if !w.in.IsZero() {
			in++
		}
	}
	// 100 s at one 10 s session at a time: 10 admissions; the attacker
	// takes at most one of them.
	if in < 8 {
		t.Fatalf("honest waiters got %d admissions in 110 s, want at least 8", in)
	}
}

// TestCopiedPlacesAdmitOnce: twenty copies of one place, each following its
// own cookie as a browser does, take one admission between them (defect 3:
// they took 15 of the first 20).
func TestCopiedPlacesAdmitOnce(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 5
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	for range 5 {
		decide(t, e, &room, nil, t0)
	}
	place := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	copies := make([]usher.Ticket, 20)
	for i := range copies {
		copies[i] = place
	}
	var honest []usher.Ticket
	for i := range 20 {
		honest = append(honest, decide(t, e, &room, nil, t0.Add(2*time.Second+time.Duration(i)*time.Millisecond)).Ticket)
	}
	got, admissions := 0, 0
	for now := t0.Add(2 * time.Second); admissions < 20 && now.Before(t0.Add(5*time.Minute)); now = now.Add(250 * time.Millisecond) {
		for i := range copies {
			if copies[i].State == usher.Admitted || now.Before(copies[i].NextCheckIn) {
				continue
			}
			d := decide(t, e, &room, &copies[i], now)
			if d.TicketChanged {
				copies[i] = d.Ticket
			}
			if d.NewlyAdmitted {
				got++
				admissions++
			}
		}
		for i := range honest {
			if honest[i].State == usher.Admitted || now.Before(honest[i].NextCheckIn) {
				continue
			}
			d := decide(t, e, &room, &honest[i], now)
			honest[i] = d.Ticket
			if d.NewlyAdmitted {
				admissions++
			}
		}
	}
	if got > 1 {
		t.Fatalf("20 copies of one place took %d of the first %d admissions, want at most 1", got, admissions)
	}
}

// TestCookielessBotDrawsNothing: in a random room, a bot that sends ten
// requests a second without a cookie gets no draw while others wait
// (defect 4: 21 admissions against 19 for 200 honest waiters).
func TestCookielessBotDrawsNothing(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // 2 s refresh
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 10
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	for range 10 {
		decide(t, e, &room, nil, t0)
	}
	honest := make([]*usher.Ticket, 200)
	for i := range honest {
		tk := decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond)).Ticket
		honest[i] = &tk
	}
	bot, people := 0, 0
	for now := t0.Add(time.Second); now.Before(t0.Add(60 * time.Second)); now = now.Add(100 * time.Millisecond) {
		if d := decide(t, e, &room, nil, now); d.Outcome == usher.Admit {
			bot++
		}
		for i, tk := range honest {
			if tk == nil || now.Before(tk.NextCheckIn) {
				continue
			}
			d := decide(t, e, &room, tk, now)
			if d.Outcome == usher.Admit {
				people++
				honest[i] = nil
				continue
			}
			next := d.Ticket
			honest[i] = &next
		}
	}
	// An honest waiter's share is people/200; the bot must get no more
	// than twice that (here: none, while the line is never empty).
	if float64(bot) > 2*float64(people)/200 {
		t.Fatalf("the cookie-less bot got %d admissions, 200 honest waiters %d between them", bot, people)
	}
	if people == 0 {
		t.Fatal("nobody was admitted: the test measures nothing")
	}
}

// cancelStore fails every call made on a done context, as a network store
// does when the request that carries the context hangs up.
type cancelStore struct {
	usher.Store
	calls int
}

func (s *cancelStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	s.calls++
	if err := ctx.Err(); err != nil {
		return usher.AdmitResult{}, usher.Errorf(usher.EUnavailable, "store: %v", err)
	}
	return s.Store.Admit(ctx, room, op)
}

// TestHangUpsNeverSwitchTheFailMode: requests that hang up before their
// decision neither fail it nor open the breaker; with fail_mode open, the
// next request still meets the full room (defect 5: 4 hang-ups, then a GET
// admitted past a full room 20 times in 20).
func TestHangUpsNeverSwitchTheFailMode(t *testing.T) {
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs := &cancelStore{Store: st}
	e := New(cs, Options{FailOpen: true, Rand: newRand(1)})
	room := simRoom()
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	for round := range 20 {
		now := t0.Add(time.Duration(round) * 100 * time.Millisecond)
		for range 4 {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // the client sent and closed
			d, err := e.Decide(ctx, &room, usher.Visit{Now: now})
			if err != nil || d.Degraded {
				t.Fatalf("a hung-up request: %+v, %v; want a normal decision", d, err)
			}
		}
		if d := decide(t, e, &room, nil, now); d.Outcome == usher.Admit {
			t.Fatalf("round %d: a visitor admitted past a full room after hang-ups (degraded %v)", round, d.Degraded)
		}
	}
	if e.StoreDown() || e.FailModeDecisions() != 0 {
		t.Fatalf("store down %v, fail-mode decisions %d after hang-ups only", e.StoreDown(), e.FailModeDecisions())
	}
}

// TestPrequeueEndsEarlierSessions: a session admitted before an event's
// window, browsing all along, is out by the event's start and cannot keep
// its slot through the sale (defect 9: a 09:00 session was still inside at
// 11:00).
func TestPrequeueEndsEarlierSessions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		renewal bool
	}{{"event disables renewal", false}, {"event renews", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t)
			room := simRoom()
			room.TotalActiveUsers = 2
			room.SessionDuration = 10 * time.Minute // the everyday sessions
			start := t0.Add(2 * time.Hour)
			sale := 15 * time.Minute
			noRenew := !tc.renewal
			room.Events = []usher.Event{{Name: "sale", PrequeueStart: start.Add(-30 * time.Minute), Start: start, End: start.Add(3 * time.Hour),
				Overrides: usher.Overrides{SessionDuration: &sale, DisableSessionRenewal: &noRenew}}}
			tk := decide(t, e, &room, nil, t0).Ticket // 09:00, two hours before the sale
			var out time.Time
			for now := t0.Add(30 * time.Second); now.Before(start.Add(time.Hour)); now = now.Add(30 * time.Second) {
				d := decide(t, e, &room, &tk, now)
				if d.Outcome != usher.Admit || d.NewlyAdmitted {
					out = now
					break
				}
				if d.TicketChanged {
					tk = d.Ticket
				}
			}
			if out.IsZero() || !out.Before(start) {
				t.Fatalf("a session from 2 h before the sale, browsing every 30 s, was still inside at %v (start %v)", out, start)
			}
		})
	}
}

// TestFailClosedKeepsTheArrival: a new visitor who arrives while the store
// is down keeps that arrival when it comes back (defect 11).
func TestFailClosedKeepsTheArrival(t *testing.T) {
	e, f := newFlaky(t, false)
	room := simRoom()
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	f.down = true
	early := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	f.down = false
	later := t0.Add(BreakerCooldown + 3*time.Second)
	decide(t, e, &room, nil, later.Add(-time.Second)) // someone arrives after
	d := decide(t, e, &room, &early, later)
	if !d.Ticket.ArrivedAt.Equal(early.ArrivedAt) || d.Position != 1 {
		t.Fatalf("after the outage: arrival %v position %d, want its arrival %v and first in line", d.Ticket.ArrivedAt, d.Position, early.ArrivedAt)
	}
}

// TestEarlyCheckInChangesNothing: a check-in before the ticket allows
// counts nothing: no draw, no new ticket, the same place.
func TestEarlyCheckInChangesNothing(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.RefreshInterval = 20 * time.Second
	room.TotalActiveUsers = 1
	decide(t, e, &room, nil, t0)
	tk := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	for i := 0; ; i++ {
		now := t0.Add(time.Second + time.Duration(i)*time.Second)
		if !now.Before(tk.NextCheckIn.Add(-EarlyTolerance)) {
			if i < 5 {
				t.Fatalf("only %d early check-ins before %v: the test measures little", i, tk.NextCheckIn)
			}
			break
		}
		d := decide(t, e, &room, &tk, now)
		if d.TicketChanged || d.Outcome != usher.Wait || !d.Replay || d.Position != 1 {
			t.Fatalf("early check-in %d: %+v", i, d)
		}
		if want := tk.NextCheckIn.Sub(now).Round(time.Second); d.RefreshAfter != max(time.Second, want) {
			t.Fatalf("early check-in %d: refresh after %v, want %v", i, d.RefreshAfter, want)
		}
	}
	if d := decide(t, e, &room, &tk, tk.NextCheckIn); !d.TicketChanged || d.Replay {
		t.Fatalf("on time: %+v, want counted", d)
	}
}

// TestClientLimitBoundsOneClient: one client (one key) gets the limit's
// tickets a minute at their place; the rest wait behind everyone who comes
// later, or are refused.
func TestClientLimitBoundsOneClient(t *testing.T) {
	for _, reject := range []bool{false, true} {
		e := newEngine(t)
		room := simRoom()
		room.TotalActiveUsers = 1
		room.RefreshInterval = 20 * time.Second // everyone stays live for the test
		room.ClientLimit = usher.ClientLimit{NewVisitorsPerMinute: 5}
		if reject {
			room.ClientLimit.OverLimit = "reject"
		}
		decide(t, e, &room, nil, t0)
		front, back, turned := 0, 0, 0
		for i := range 50 {
			d, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0.Add(time.Duration(i) * 100 * time.Millisecond), Client: netip.MustParseAddr("192.0.2.77")})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case d.Outcome == usher.Turn && d.OverClient:
				turned++
			case d.OverClient && d.Ticket.Back:
				back++
			case d.Outcome == usher.Wait:
				front++
			}
		}
		if front != 5 || back+turned != 45 || (reject && turned != 45) || (!reject && back != 45) {
			t.Fatalf("reject=%v: %d placed, %d at the back, %d refused; want 5 placed and the other 45 %s",
				reject, front, back, turned, map[bool]string{true: "refused", false: "at the back"}[reject])
		}
		d, _ := e.Decide(context.Background(), &room, usher.Visit{Now: t0.Add(6 * time.Second), Client: netip.MustParseAddr("198.51.100.78")})
		if d.Position != 6 {
			t.Fatalf("reject=%v: another client's newcomer is at %d, want 6 (behind the 5 placed, ahead of the back)", reject, d.Position)
		}
	}
}

// TestInvites: an admit invite goes in at once (counted, past a full
// room); a front invite waits ahead of everyone, in fifo and random rooms.
func TestInvites(t *testing.T) {
	for _, method := range []usher.QueueingMethod{usher.FIFO, usher.Random} {
		e := newEngine(t)
		room := simRoom()
		room.QueueingMethod = method
		room.TotalActiveUsers = 1
		decide(t, e, &room, nil, t0)
		for i := range 5 {
			decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Second))
		}
		in, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0.Add(6 * time.Second), Invite: usher.InviteAdmit})
		if err != nil || !in.NewlyAdmitted || in.Stats.Active != 2 {
			t.Fatalf("%s: admit invite: %+v, %v", method, in, err)
		}
		front, err := e.Decide(context.Background(), &room, usher.Visit{Now: t0.Add(7 * time.Second), Invite: usher.InviteFront})
		if err != nil || front.Outcome != usher.Wait || front.Ticket.Place != usher.FrontPlace {
			t.Fatalf("%s: front invite: %+v, %v", method, front, err)
		}
		if method == usher.FIFO && front.Position != 1 {
			t.Fatalf("front invite at position %d, want 1", front.Position)
		}
		// The slots free at +16 s (15 s sessions): the front invite is next.
		tk := front.Ticket
		d := decide(t, e, &room, &tk, t0.Add(22*time.Second))
		if !d.NewlyAdmitted {
			t.Fatalf("%s: the front invite was not admitted at the first free slot: %+v", method, d)
		}
	}
}

// TestMonthLongPrequeueMemory: a shuffled pre-queue spread over 31 days
// with 50 waiters costs memory for 50 waiters, not for the month of
// seconds between them (defect 10: 178 MB).
func TestMonthLongPrequeueMemory(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	start := t0.Add(31 * 24 * time.Hour)
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: t0, Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
	room.RefreshInterval = time.Minute
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range 50 {
		decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Second))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("50 waiters of a 31-day shuffled pre-queue: heap grew %d KB", grew>>10)
	if grew > 4<<20 {
		t.Fatalf("heap grew %d MB for 50 waiters", grew>>20)
	}
}

// TestFailOpenFloodKeepsNoState: with the store down and fail_mode open,
// a flood of visitors without a cookie (each a new identity) leaves no
// state behind in the engine (defect 10: its map of pending moves grew
// with every identity).
func TestFailOpenFloodKeepsNoState(t *testing.T) {
	e, f := newFlaky(t, true)
	room := simRoom()
	f.down = true
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var last usher.Decision
	for i := range 100_000 {
		last = decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond))
	}
	// Their renewals while the store is still down keep nothing either.
	for i := range 10_000 {
		tk := last.Ticket
		tk.VisitorID[0] = byte(i)
		decide(t, e, &room, &tk, t0.Add(100*time.Second+time.Duration(i)*time.Millisecond))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("110,000 fail-open decisions: heap grew %d KB", grew>>10)
	if grew > 1<<20 {
		t.Fatalf("the engine kept %d KB for visitors it let in uncounted", grew>>10)
	}
}

// TestRevoke: a revoked session's slot is free within one decision; its
// ticket, replayed, makes a new visitor on this node at once and on another
// node (another engine over the same store) at its next renewal.
func TestRevoke(t *testing.T) {
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := New(st, Options{Rand: newRand(1)})
	b := New(st, Options{Rand: newRand(2)})
	room := simRoom() // 15 s sessions, renewal step 1 s
	room.TotalActiveUsers = 1
	tk := decide(t, a, &room, nil, t0).Ticket
	if _, err := a.Revoke(context.Background(), &room, tk.VisitorID, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if d := decide(t, a, &room, nil, t0.Add(time.Second)); !d.NewlyAdmitted {
		t.Fatalf("the revoked session's slot was not free: %+v", d.Outcome)
	}
	if d := decide(t, a, &room, &tk, t0.Add(2*time.Second)); d.Outcome == usher.Admit {
		t.Fatal("the revoked ticket was honoured on the node that revoked it")
	}
	// Another node sees the revocation at the ticket's next renewal.
	d := decide(t, b, &room, &tk, t0.Add(3*time.Second))
	if d.Outcome == usher.Admit {
		t.Fatalf("another node honoured the revoked ticket at its renewal: %+v", d)
	}
}

// floodedDraws runs 30 honest waiters in a random room of 3 (10 s sessions,
// no renewal, 2 s refresh) for 60 s, with flood cookie-less visits a second
// besides, and returns how many honest waiters went in and whether a
// newcomer of the flood ever did.
func floodedDraws(t *testing.T, flood int) (honestIn, floodIn int) {
	t.Helper()
	e := newEngine(t)
	room := simRoom()
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 3
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	for range 3 {
		decide(t, e, &room, nil, t0)
	}
	honest := make([]*usher.Ticket, 30)
	for i := range honest {
		tk := decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond)).Ticket
		honest[i] = &tk
	}
	step := 20 * time.Millisecond
	per := 0.0
	for now := t0.Add(100 * time.Millisecond); now.Before(t0.Add(60 * time.Second)); now = now.Add(step) {
		for per += float64(flood) * step.Seconds(); per >= 1; per-- {
			if d := decide(t, e, &room, nil, now); d.Outcome == usher.Admit {
				floodIn++
			}
		}
		for i, tk := range honest {
			if tk == nil || now.Before(tk.NextCheckIn) {
				continue
			}
			d := decide(t, e, &room, tk, now)
			if d.Outcome == usher.Admit {
				honestIn++
				honest[i] = nil
				continue
			}
			next := d.Ticket
			honest[i] = &next
		}
	}
	return honestIn, floodIn
}

// TestCookielessFloodWastesNoDraws: visits that never come back wait in
// their joining bucket, outside the draws' pool, so a flood of them does
// not thin the honest waiters' chances while slots stay free (invariant 4)
// and none of them goes in past the line.
func TestCookielessFloodWastesNoDraws(t *testing.T) {
	ctl, _ := floodedDraws(t, 0)
	in, bot := floodedDraws(t, 50)
	t.Logf("honest admissions in 60 s: %d with a flood of 50 cookie-less visits a second, %d without; the flood got %d", in, ctl, bot)
	if ctl < 10 {
		t.Fatalf("only %d honest admissions without a flood: the test measures little", ctl)
	}
	if 4*in < 3*ctl {
		t.Fatalf("the flood cut the honest admissions to %d, from %d without it", in, ctl)
	}
	if bot != 0 {
		t.Fatalf("the flood got %d admissions while honest visitors waited", bot)
	}
}

// TestJoinersBlockNewcomers: a newcomer that has not checked in yet takes
// no share of a draw, but still counts as waiting: a slot that frees before
// anyone's first check-in does not go to the next visitor who arrives.
func TestJoinersBlockNewcomers(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 1
	room.SessionDuration = 2 * time.Second
	room.DisableSessionRenewal = true
	room.RefreshInterval = 30 * time.Second
	decide(t, e, &room, nil, t0)
	first := decide(t, e, &room, nil, t0.Add(time.Second))
	if first.Outcome != usher.Wait || !first.Ticket.Joining {
		t.Fatalf("a newcomer to a full random room: %v, joining %v; want waiting in its joining bucket", first.Outcome, first.Ticket.Joining)
	}
	if first.Stats.Waiting != 1 {
		t.Fatalf("waiting %d after one newcomer, want 1", first.Stats.Waiting)
	}
	// The session ends at t0+2s; the joiner checks in at t0+31s.
	for now := t0.Add(3 * time.Second); now.Before(t0.Add(30 * time.Second)); now = now.Add(100 * time.Millisecond) {
		if d := decide(t, e, &room, nil, now); d.Outcome == usher.Admit {
			t.Fatalf("a cookie-less visit at +%v went in before the visitor who joined at +1s checked in", now.Sub(t0))
		}
	}
	d := decide(t, e, &room, &first.Ticket, first.Ticket.NextCheckIn)
	if d.Outcome != usher.Admit {
		t.Fatalf("the joiner's first check-in with a free slot: %v, want admitted", d.Outcome)
	}
}

// TestFastPollingCountsLittleMore: a client that checks in every 100 ms
// on a 2 s refresh is counted at most a quarter more often than a page
// that waits its turn (the early tolerance is a quarter of the interval),
// so it cannot take every freed slot in a tie.
func TestFastPollingCountsLittleMore(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // 2 s refresh
	room.TotalActiveUsers = 1
	room.SessionDuration = time.Hour
	decide(t, e, &room, nil, t0)
	tk := decide(t, e, &room, nil, t0.Add(time.Second)).Ticket
	counted, polls := 0, 0
	for now := t0.Add(time.Second); now.Before(t0.Add(61 * time.Second)); now = now.Add(100 * time.Millisecond) {
		polls++
		d := decide(t, e, &room, &tk, now)
		if d.TicketChanged {
			counted++
			tk = d.Ticket
		}
	}
	// A page checking in on time is counted every RefreshAfter (1 s near
	// the front: the interval halves), 60 times in 60 s.
	t.Logf("%d polls in 60 s, %d counted", polls, counted)
	if counted > 60*5/4+1 {
		t.Fatalf("a client polling every 100 ms was counted %d times in 60 s, more than 5/4 of the 60 an on-time page is", counted)
	}
}
