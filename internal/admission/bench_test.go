package admission

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// BenchmarkDecideAdmitted is an admitted visitor's request: no store round
// trip unless the session end moves to a later second.
func BenchmarkDecideAdmitted(b *testing.B) {
	e := newEngine(b)
	room := simRoom()
	room.TotalActiveUsers = 1_000_000
	tk := decide(b, e, &room, nil, t0).Ticket
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// 1,000 requests a second of simulated time: one renewal in 1,000.
		now := t0.Add(time.Duration(i) * time.Millisecond)
		d, err := e.Decide(ctx, &room, usher.Visit{Ticket: &tk, Now: now})
		if err != nil || d.Outcome != usher.Admit {
			b.Fatal(d.Outcome, err)
		}
		if d.TicketChanged {
			tk = d.Ticket
		}
	}
}

// BenchmarkDecideNewVisitor is a new visitor admitted into a room with free
// slots: one store operation that counts an admission.
func BenchmarkDecideNewVisitor(b *testing.B) {
	e := newEngine(b)
	room := simRoom()
	room.TotalActiveUsers, room.NewUsersPerMinute = 1<<30, 1<<30
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now := t0.Add(time.Duration(i) * time.Microsecond)
		d, err := e.Decide(ctx, &room, usher.Visit{Ticket: nil, Now: now})
		if err != nil || d.Outcome != usher.Admit {
			b.Fatal(d.Outcome, err)
		}
	}
}

// BenchmarkDecideCheckIn is a waiter's check-in in a full room with 10,000
// waiters spread over 1,000 arrival seconds ahead of it.
func BenchmarkDecideCheckIn(b *testing.B) {
	e := newEngine(b)
	room := simRoom()
	room.TotalActiveUsers = 1
	room.RefreshInterval = time.Hour // the crowd stays live for the run
	room.SessionDuration = 24 * time.Hour
	decide(b, e, &room, nil, t0)
	for i := range 10_000 {
		decide(b, e, &room, nil, t0.Add(time.Duration(i%1000)*time.Second))
	}
	last := t0.Add(1000 * time.Second)
	tk := decide(b, e, &room, nil, last).Ticket
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		// Each check-in when the ticket allows it (a check-in before that
		// counts nothing).
		tk.NextCheckIn = time.Time{}
		d, err := e.Decide(ctx, &room, usher.Visit{Ticket: &tk, Now: last.Add(time.Duration(i) * time.Microsecond)})
		if err != nil || d.Outcome != usher.Wait || d.Position != 10_001 || d.Replay {
			b.Fatal(d.Outcome, d.Position, d.Replay, err)
		}
		tk = d.Ticket
	}
}
