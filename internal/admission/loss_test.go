package admission

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestDataLossHoldsRenewableSessions: Redis loses its data while a room
// of two is full of sessions of five minutes, renewable, whose holders
// make no more requests. Each session is counted to its hold (five
// minutes and a renewal step less a second) plus the slack, so the room
// must stay full after the loss until the last of them has ended: new
// a waiter that checks in every second is not let in while they run.
// It fails when the store holds the room only for session_duration after
// the loss.
func TestDataLossHoldsRenewableSessions(t *testing.T) {
	srv := redistest.StartServer(t)
	st, err := redis.Open(context.Background(), redis.Options{
		Addrs: []string{srv.Addr()}, KeyPrefix: "loss-hold", Timeout: 5 * time.Second,
		Logger: slog.New(slog.DiscardHandler), RecoveryMargin: time.Second, // covers a slack under a second
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := New(st, Options{Rand: rand.New(rand.NewPCG(7, 8)).Uint64, CellSlack: 250 * time.Millisecond})
	room := simRoom()
	room.TotalActiveUsers, room.NewUsersPerMinute = 2, 100
	room.SessionDuration = 5 * time.Minute
	var until []time.Time
	for i := range 2 {
		d := decide(t, e, &room, nil, t0.Add(time.Duration(i)*100*time.Millisecond))
		if d.Outcome != usher.Admit {
			t.Fatalf("visitor %d before the loss: %v", i, d.Outcome)
		}
		until = append(until, d.Ticket.Until)
	}
	if hold := until[0].Sub(t0); hold <= room.SessionDuration+2*time.Second {
		t.Fatalf("a session counted %v: the test needs a renewal step over 2 s", hold)
	}
	srv.Do("FLUSHALL")
	// A waiter comes after the loss and checks in every second.
	var tk *usher.Ticket
	for now := t0.Add(2 * time.Second); now.Before(until[1].Add(30*time.Second)) && len(until) == 2; now = now.Add(time.Second) {
		if tk != nil {
			tk.NextCheckIn = now
		}
		d := decide(t, e, &room, tk, now)
		switch d.Outcome {
		case usher.Admit:
			until = append(until, d.Ticket.Until)
			if live := 1 + countLive(until[:2], now); live > room.TotalActiveUsers {
				t.Fatalf("admitted %v after the loss while %d sessions of before still run, in a room of %d", now.Sub(t0.Add(2*time.Second)), live-1, room.TotalActiveUsers)
			}
		case usher.Wait:
			tk = &d.Ticket
		default:
			t.Fatalf("at %v: %v", now.Sub(t0), d.Outcome)
		}
	}
	if len(until) == 2 {
		t.Error("the room never admitted again after the sessions ended")
	}
}

// countLive returns how many of the sessions ending at until are valid at
// now.
func countLive(until []time.Time, now time.Time) int {
	n := 0
	for _, u := range until {
		if now.Before(u) {
			n++
		}
	}
	return n
}
