package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestCellSlackHoldsThePlace: a session's place frees when its count ends,
// CellSlack after the session itself, to the millisecond; with no slack,
// at the session's end. A room of one: the session's holder makes no more
// requests, and a waiter checks in from a second before the session's
// end, then every 50 ms, on simulated time.
func TestCellSlackHoldsThePlace(t *testing.T) {
	for _, slack := range []time.Duration{0, 250 * time.Millisecond, time.Second, 1500 * time.Millisecond, 3 * time.Second} {
		e := New(memStore(t), Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, CellSlack: slack})
		room := simRoom()
		room.TotalActiveUsers = 1
		a := decide(t, e, &room, nil, t0)
		if a.Outcome != usher.Admit {
			t.Fatalf("slack %v: first visitor %v", slack, a.Outcome)
		}
		end := a.Ticket.Until
		if got, want := time.Unix(a.Ticket.Cell, 0), end.Add(slack); !got.Equal(want) {
			t.Errorf("slack %v: active cell %v, want the session's end %v plus the slack", slack, got.UTC(), end)
		}
		w := decide(t, e, &room, nil, t0.Add(time.Second))
		if w.Outcome != usher.Wait {
			t.Fatalf("slack %v: second visitor %v, want waiting", slack, w.Outcome)
		}
		tk := w.Ticket
		in := time.Time{}
		for now := end.Add(-time.Second); now.Before(end.Add(slack + 5*time.Second)); now = now.Add(50 * time.Millisecond) {
			tk.NextCheckIn = now // checks in when its ticket allows, every 50 ms
			d := decide(t, e, &room, &tk, now)
			if d.Outcome == usher.Admit {
				in = now
				break
			}
			tk = d.Ticket
		}
		if want := end.Add(slack); !in.Equal(want) {
			t.Errorf("slack %v: the waiter went in %v after the session's end, want %v", slack, in.Sub(end), slack)
		}
	}
}

// TestSessionEndWithSlack: whatever the moment and the slack, a session
// counted at now ends at least SessionHold after now and less than a
// second later than that, and its count outlives it by exactly the slack
// (a sub-second slack is not rounded up to the second). Admissions and
// renewals both, on simulated time at random milliseconds.
func TestSessionEndWithSlack(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, slack := range []time.Duration{0, time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 999 * time.Millisecond, time.Second, 2500 * time.Millisecond} {
		e := New(memStore(t), Options{Rand: rng.Uint64, CellSlack: slack})
		room := simRoom()
		room.TotalActiveUsers = 1000
		room.NewUsersPerMinute = 100000
		s := room.At(t0).Settings
		hold := usher.SessionHold(&s)
		check := func(what string, now time.Time, tk usher.Ticket) {
			t.Helper()
			if min := now.Add(hold); tk.Until.Before(min) || !tk.Until.Before(min.Add(time.Second)) {
				t.Errorf("slack %v: %s at %v: session to %v, want from %v to a second later", slack, what, now, tk.Until, min)
			}
			if got := time.Unix(tk.Cell, 0).Sub(tk.Until); got != slack {
				t.Errorf("slack %v: %s at %v: count outlives the session by %v", slack, what, now, got)
			}
		}
		for i := 0; i < 200; i++ {
			now := t0.Add(time.Duration(i)*time.Minute + time.Duration(rng.IntN(60000))*time.Millisecond)
			a := decide(t, e, &room, nil, now)
			if a.Outcome != usher.Admit {
				t.Fatalf("slack %v: visitor %d: %v", slack, i, a.Outcome)
			}
			check("admission", now, a.Ticket)
			// A request due a renewal (session_duration from now ends after
			// the session) renews it on the same terms.
			later := a.Ticket.Until.Add(-s.SessionDuration + time.Duration(1+rng.IntN(900))*time.Millisecond)
			r := decide(t, e, &room, &a.Ticket, later)
			if r.Outcome != usher.Admit || !r.TicketChanged || r.Ticket.Cell <= a.Ticket.Cell {
				t.Fatalf("slack %v: renewal at %v: %v, cell %d after %d", slack, later, r.Outcome, r.Ticket.Cell, a.Ticket.Cell)
			}
			check("renewal", later, r.Ticket)
		}
	}
}

// TestSetCellSlack: a slack put in force applies to the sessions counted
// from then on, each ticket keeping the end and cell it was given; the
// longest slack in force so far is remembered for the records of ended
// sessions.
func TestSetCellSlack(t *testing.T) {
	e := New(memStore(t), Options{Rand: rand.New(rand.NewPCG(5, 6)).Uint64, CellSlack: 250 * time.Millisecond})
	room := simRoom()
	room.TotalActiveUsers, room.NewUsersPerMinute = 100, 1000
	gap := func(tk usher.Ticket) time.Duration { return time.Unix(tk.Cell, 0).Sub(tk.Until) }
	a := decide(t, e, &room, nil, t0.Add(123*time.Millisecond))
	e.SetCellSlack(1500 * time.Millisecond)
	b := decide(t, e, &room, nil, t0.Add(456*time.Millisecond))
	e.SetCellSlack(250 * time.Millisecond)
	c := decide(t, e, &room, nil, t0.Add(789*time.Millisecond))
	for i, want := range []struct {
		tk  usher.Ticket
		gap time.Duration
	}{{a.Ticket, 250 * time.Millisecond}, {b.Ticket, 1500 * time.Millisecond}, {c.Ticket, 250 * time.Millisecond}} {
		if got := gap(want.tk); got != want.gap {
			t.Errorf("session %d: count outlives it by %v, want %v", i, got, want.gap)
		}
	}
	if got := e.CellSlack(); got != 250*time.Millisecond {
		t.Errorf("slack in force %v", got)
	}
	if got := time.Duration(e.slackMax.Load()); got != 1500*time.Millisecond {
		t.Errorf("longest slack so far %v, want 1.5s", got)
	}
}

// TestCookieBetweenSessionEndAndCount: with a sub-second slack, a session
// ends 250 ms before its count does. Its cookie shown in between (a copy,
// a replay, a reload at that moment) holds no session: in a room of one
// whose place is still counted, it waits like any new visitor, and no
// one is let in until the count ends.
func TestCookieBetweenSessionEndAndCount(t *testing.T) {
	e := New(memStore(t), Options{Rand: rand.New(rand.NewPCG(9, 10)).Uint64, CellSlack: 250 * time.Millisecond})
	room := simRoom()
	room.TotalActiveUsers = 1
	a := decide(t, e, &room, nil, t0.Add(300*time.Millisecond))
	if a.Outcome != usher.Admit {
		t.Fatalf("first visitor %v", a.Outcome)
	}
	cell := time.Unix(a.Ticket.Cell, 0)
	for _, at := range []time.Time{a.Ticket.Until, a.Ticket.Until.Add(100 * time.Millisecond), cell.Add(-time.Millisecond)} {
		tk := a.Ticket
		if d := decide(t, e, &room, &tk, at); d.Outcome == usher.Admit {
			t.Errorf("the cookie shown %v after its session ended (its count ends %v after) was admitted", at.Sub(a.Ticket.Until), cell.Sub(a.Ticket.Until))
		}
	}
}
