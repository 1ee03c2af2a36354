package admission

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// TestSettingsChangesNeverBreakLimits is a property test of invariant 12:
// the room's settings change every few seconds (session length up and
// down, renewal on and off, limits, events with pre-queues starting and
// ending) while honest visitors come and go and attackers present copies of
// any ticket ever issued. Whatever happens:
//   - a new admission happens only while the sessions the room would honour
//     are fewer than total_active_users in force, and the admissions of the
//     last 60 s fewer than new_users_per_minute in force;
//   - no ticket is let in without an admission once its session ended;
//   - the store's active count is never below the sessions it honours, and
//     no count is ever taken from a cell twice.
func TestSettingsChangesNeverBreakLimits(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		checkSettingsChanges(t, seed)
	}
}

func checkSettingsChanges(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 99))
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	e := New(st, Options{Rand: rng.Uint64})
	ctx := context.Background()
	room := simRoom()
	room.RefreshInterval = 2 * time.Second
	change := func(now time.Time) {
		room.SessionDuration = []time.Duration{10 * time.Second, 30 * time.Second, 2 * time.Minute}[rng.IntN(3)]
		room.DisableSessionRenewal = rng.IntN(3) == 0
		room.TotalActiveUsers = []int{3, 5, 8}[rng.IntN(3)]
		room.NewUsersPerMinute = []int{4, 20, 100}[rng.IntN(3)]
		room.QueueingMethod = []usher.QueueingMethod{usher.FIFO, usher.Random}[rng.IntN(2)]
		room.Events = nil
		if rng.IntN(3) == 0 {
			sd := []time.Duration{10 * time.Second, 5 * time.Minute}[rng.IntN(2)]
			nr := rng.IntN(2) == 0
			total := []int{2, 10}[rng.IntN(2)]
			start := now.Add(time.Duration(rng.IntN(20)) * time.Second)
			ev := usher.Event{Name: "e", Start: start, End: start.Add(time.Duration(10+rng.IntN(40)) * time.Second),
				Overrides: usher.Overrides{SessionDuration: &sd, DisableSessionRenewal: &nr, TotalActiveUsers: &total}}
			if rng.IntN(2) == 0 {
				ev.PrequeueStart = now
			}
			room.Events = []usher.Event{ev}
		}
	}
	type visitor struct {
		tk      *usher.Ticket
		next    time.Time
		attack  bool
		leaveAt time.Time
	}
	var vs []*visitor
	var issued []usher.Ticket   // every ticket ever issued: attackers replay any
	var sessions []usher.Ticket // the admitted ones among them
	var admissions []time.Time
	now := t0
	change(now)
	nextChange := now.Add(5 * time.Second)
	honoured := func(exclude [8]byte) int {
		seen := map[[8]byte]bool{}
		for i := range sessions {
			tk := &sessions[i]
			if tk.VisitorID != exclude && !seen[tk.VisitorID] && room.Session(tk, now).Valid {
				seen[tk.VisitorID] = true
			}
		}
		return len(seen)
	}
	for step := range 10000 {
		now = now.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
		if now.After(nextChange) {
			change(now)
			nextChange = now.Add(time.Duration(3+rng.IntN(10)) * time.Second)
		}
		if rng.IntN(8) == 0 {
			vs = append(vs, &visitor{next: now, attack: rng.IntN(4) == 0, leaveAt: now.Add(time.Duration(rng.IntN(120)) * time.Second)})
		}
		var v *visitor
		for _, c := range vs {
			if !c.next.After(now) && now.Before(c.leaveAt) {
				v = c
				break
			}
		}
		if v == nil {
			continue
		}
		presented := v.tk
		if v.attack && len(issued) > 0 && rng.IntN(2) == 0 {
			cp := issued[rng.IntN(len(issued))] // any ticket, any age
			presented = &cp
		}
		wasValid := presented != nil && room.Session(presented, now).Valid
		var presentedID [8]byte
		if presented != nil {
			presentedID = presented.VisitorID
		}
		before := honoured(presentedID)
		d, err := e.Decide(ctx, &room, usher.Visit{Ticket: presented, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		s := room.At(now).Settings
		switch {
		case d.NewlyAdmitted && d.Settings.QueueingMethod != usher.Passthrough:
			if before >= s.TotalActiveUsers {
				t.Fatalf("seed %d step %d: admitted with %d sessions honoured in a room of %d", seed, step, before, s.TotalActiveUsers)
			}
			n := 0
			for _, a := range admissions {
				if now.Sub(a) < time.Minute {
					n++
				}
			}
			if n >= s.NewUsersPerMinute {
				t.Fatalf("seed %d step %d: admitted with %d admissions in the last minute, limit %d", seed, step, n, s.NewUsersPerMinute)
			}
			admissions = append(admissions, now)
		case d.Outcome == usher.Admit && !d.NewlyAdmitted && !wasValid && !d.Replay:
			t.Fatalf("seed %d step %d: a ticket whose session ended was let in without an admission: %+v", seed, step, presented)
		}
		if d.TicketChanged {
			tk := d.Ticket
			issued = append(issued, tk)
			if tk.State == usher.Admitted {
				sessions = append(sessions, tk)
			}
			if presented == v.tk {
				v.tk = &tk
			}
		}
		v.next = now.Add(d.RefreshAfter)
		if d.Outcome == usher.Admit {
			v.next = now.Add(time.Duration(1+rng.IntN(5)) * time.Second)
		}
		if step%25 == 0 {
			sts, _ := st.Stats(ctx, room.ID, now)
			if h := honoured([8]byte{}); sts.Active < int64(h) {
				t.Fatalf("seed %d step %d: the store counts %d active, %d sessions are honoured", seed, step, sts.Active, h)
			}
		}
	}
	if c := st.Clamped(room.ID); c != 0 {
		t.Fatalf("seed %d: %d decrements found nothing to take: a count was taken twice", seed, c)
	}
	t.Logf("seed %d: %d admissions", seed, len(admissions))
	if len(admissions) < 30 {
		t.Fatalf("seed %d: only %d admissions: the test measures little", seed, len(admissions))
	}
}
