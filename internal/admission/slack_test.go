package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// TestCellSlackHoldsThePlace: a session's place frees when its count ends,
// CellSlack after the session itself (whole seconds); with no slack, at
// the session's end. A room of one: the session's holder makes no more
// requests, and a waiter checks in at the session's end, then every
// second, on simulated time.
func TestCellSlackHoldsThePlace(t *testing.T) {
	for _, slack := range []time.Duration{0, time.Second, 3 * time.Second} {
		st, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		e := New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, CellSlack: slack})
		room := simRoom()
		room.TotalActiveUsers = 1
		a := decide(t, e, &room, nil, t0)
		if a.Outcome != usher.Admit {
			t.Fatalf("slack %v: first visitor %v", slack, a.Outcome)
		}
		end := a.Ticket.Until
		if got, want := a.Ticket.Cell, end.Unix()+int64(slack/time.Second); got != want {
			t.Errorf("slack %v: active cell %d, want the session's end %d plus the slack", slack, got, want)
		}
		w := decide(t, e, &room, nil, t0.Add(time.Second))
		if w.Outcome != usher.Wait {
			t.Fatalf("slack %v: second visitor %v, want waiting", slack, w.Outcome)
		}
		tk := w.Ticket
		in := time.Time{}
		for now := end.Add(-time.Second); now.Before(end.Add(slack + 5*time.Second)); now = now.Add(time.Second) {
			tk.NextCheckIn = now // checks in when its ticket allows, every second
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
