package admission

import (
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestHoldFillsPlacesAtOnce runs a flash crowd on simulated time with
// near-front check-ins held to the next whole second (as the gate does)
// and decided at once: holding, every place that frees at a whole second
// goes to a waiter at once, so utilisation while people wait is higher,
// and still FIFO is exact and the limit holds. runSim checks on every
// hold that the check-in could not have gone in when it came.
func TestHoldFillsPlacesAtOnce(t *testing.T) {
	room := simRoom() // 2 s refresh
	room.TotalActiveUsers, room.NewUsersPerMinute, room.SessionDuration = 100, 300, 10*time.Second
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := simConfig{seed: seed, visitors: 500, arrivalSpan: 30 * time.Second, room: room, abandonFrac: 0.2,
			browseMin: 2 * time.Second, browseMax: 8 * time.Second, horizon: 10 * time.Minute}
		held := runSim(t, cfg)
		cfg.noHold = true
		now := runSim(t, cfg)
		t.Logf("seed %d: utilisation %.4f held (%d holds), %.4f decided at once", seed, held.utilization, held.held, now.utilization)
		for name, r := range map[string]simResult{"held": held, "at once": now} {
			if r.inversions != 0 {
				t.Errorf("seed %d, %s: %d FIFO inversions", seed, name, r.inversions)
			}
			if r.maxActive > room.TotalActiveUsers {
				t.Errorf("seed %d, %s: active reached %d, limit %d", seed, name, r.maxActive, room.TotalActiveUsers)
			}
		}
		if held.held == 0 || now.held != 0 {
			t.Fatalf("seed %d: %d holds, %d without holding", seed, held.held, now.held)
		}
		if held.utilization <= now.utilization {
			t.Errorf("seed %d: utilisation %.4f holding, %.4f deciding at once", seed, held.utilization, now.utilization)
		}
	}
}

// TestHoldRules: which check-ins Hold holds.
func TestHoldRules(t *testing.T) {
	room := simRoom() // FIFO, 2 s refresh
	now := t0.Add(7300 * time.Millisecond)
	const bucket = 1000
	near := func() usher.Ticket {
		return usher.Ticket{State: usher.Waiting, ArrivedAt: time.Unix(bucket, 0), CountedAt: now.Add(-time.Second),
			NextCheckIn: now, Cell: now.Unix() + 4, Position: 3}
	}
	tests := []struct {
		name   string
		ticket func() *usher.Ticket
		room   func(*usher.Room)
		// refusal: the bucket refused (or full) and when.
		refused   int64
		full      bool
		refusedAt time.Time
		want      time.Duration
	}{
		{name: "refused in its bucket", refused: bucket, refusedAt: now.Add(-200 * time.Millisecond), want: 700 * time.Millisecond},
		{name: "refused ahead of it", refused: bucket - 5, refusedAt: now.Add(-200 * time.Millisecond), want: 700 * time.Millisecond},
		{name: "room full", refused: bucket + 5, full: true, refusedAt: now.Add(-200 * time.Millisecond), want: 700 * time.Millisecond},
		{name: "refused behind it only", refused: bucket + 1, refusedAt: now.Add(-200 * time.Millisecond)},
		{name: "refused in the second before", refused: bucket, refusedAt: now.Add(-400 * time.Millisecond)},
		{name: "nothing refused"},
		{name: "every refresh interval", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.CountedAt = now.Add(-2 * time.Second)
			return &tk
		}},
		{name: "a grown interval", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.CountedAt = now.Add(-4 * time.Second)
			return &tk
		}},
		{name: "early", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.NextCheckIn = now.Add(2 * time.Second)
			tk.CountedAt = tk.NextCheckIn.Add(-time.Second)
			return &tk
		}},
		{name: "its count would lapse", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.Cell = now.Unix() + 1
			return &tk
		}},
		{name: "at the back", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.Back = true
			return &tk
		}},
		{name: "admitted", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket {
			tk := near()
			tk.State = usher.Admitted
			return &tk
		}},
		{name: "no ticket", refused: bucket, refusedAt: now, ticket: func() *usher.Ticket { return nil }},
		{name: "random room", refused: bucket, refusedAt: now, room: func(r *usher.Room) { r.QueueingMethod = usher.Random }},
		{name: "queue all", refused: bucket, refusedAt: now, room: func(r *usher.Room) { r.QueueAll = true }},
		{name: "autopilot", refused: bucket, refusedAt: now, room: func(r *usher.Room) { r.Autopilot.Enabled = true }},
	}
	for _, tt := range tests {
		e := newEngine(t)
		r := room
		if tt.room != nil {
			tt.room(&r)
		}
		if !tt.refusedAt.IsZero() {
			slots := int64(1)
			if tt.full {
				slots = 0
			}
			e.flow.refused(r.ID, tt.refusedAt, tt.refused, 5, slots, reach(&r.Settings), true)
		}
		tk := near()
		ptk := &tk
		if tt.ticket != nil {
			ptk = tt.ticket()
		}
		if got := e.Hold(&r, ptk, now); got != tt.want {
			t.Errorf("%s: held %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestHoldsNoMoreThanCanGoIn: a line whose front is one large arrival
// second (everyone in it has nobody ahead, so every one of them is near
// the front) has its check-ins held for the next whole second only as many
// times as places can free then (twice those this engine knows of, and
// holdSpare more); the others are decided at once, refused as they would
// be after the hold. Before, all 200 were held up to a second each, for
// one place.
func TestHoldsNoMoreThanCanGoIn(t *testing.T) {
	e := newEngine(t)
	room := simRoom() // FIFO, 2 s refresh
	room.TotalActiveUsers, room.SessionDuration, room.DisableSessionRenewal = 1, 10*time.Second, true
	if d := decide(t, e, &room, nil, t0); d.Outcome != usher.Admit {
		t.Fatal("the filler was not admitted")
	}
	now := t0.Add(9300 * time.Millisecond) // its place frees at t0+10s
	const bucket = 1000
	e.flow.refused(room.ID, now.Add(-200*time.Millisecond), bucket, 0, 0, reach(&room.Settings), true)
	held := 0
	for i := range 200 {
		tk := usher.Ticket{State: usher.Waiting, ArrivedAt: time.Unix(bucket, 0), CountedAt: now.Add(-time.Second),
			NextCheckIn: now, Cell: now.Unix() + 4, Position: 1}
		tk.VisitorID[0], tk.VisitorID[1] = byte(i), byte(i>>8)
		switch d := e.Hold(&room, &tk, now); d {
		case 0:
		case 700 * time.Millisecond:
			held++
		default:
			t.Fatalf("check-in %d held %v, want 700ms or none", i, d)
		}
	}
	if want := 2*1 + holdSpare; held != want {
		t.Fatalf("%d of 200 tied near-front check-ins held for one place, want %d", held, want)
	}
	// The next moment places may free starts a new count.
	later := now.Add(time.Second)
	e.flow.refused(room.ID, later.Add(-200*time.Millisecond), bucket, 0, 0, reach(&room.Settings), true)
	tk := usher.Ticket{State: usher.Waiting, ArrivedAt: time.Unix(bucket, 0), CountedAt: later.Add(-time.Second),
		NextCheckIn: later, Cell: later.Unix() + 4, Position: 1}
	if d := e.Hold(&room, &tk, later); d != 700*time.Millisecond {
		t.Fatalf("the next second's first check-in: held %v, want 700ms", d)
	}
}

// TestFarBackRefusalHoldsNothing: the refusal of a waiter a minute or more
// from the front (total_active_users + new_users_per_minute ahead) is not
// what holds a near-front check-in; a near-front one's is.
func TestFarBackRefusalHoldsNothing(t *testing.T) {
	room := simRoom()
	now := t0.Add(7300 * time.Millisecond)
	tk := usher.Ticket{State: usher.Waiting, ArrivedAt: time.Unix(1000, 0), CountedAt: now.Add(-time.Second),
		NextCheckIn: now, Cell: now.Unix() + 4, Position: 3}
	far := reach(&room.Settings)
	for _, c := range []struct {
		ahead int64
		want  time.Duration
	}{{far, 0}, {far + 500, 0}, {far - 1, 700 * time.Millisecond}, {2, 700 * time.Millisecond}} {
		e := newEngine(t)
		e.flow.refused(room.ID, now.Add(-200*time.Millisecond), 900, c.ahead, 0, far, true)
		if got := e.Hold(&room, &tk, now); got != c.want {
			t.Errorf("refused with %d ahead (reach %d): held %v, want %v", c.ahead, far, got, c.want)
		}
	}
}
