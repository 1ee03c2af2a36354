package admission

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// fixedLimiter governs every room to fixed figures.
type fixedLimiter struct{ rate, conc int }

func (l fixedLimiter) Limit(_ string, s *usher.Settings) {
	s.NewUsersPerMinute = l.rate
	if l.conc > 0 {
		s.TotalActiveUsers = l.conc
	}
}

// TestLimiterGovernsAdmissions: with autopilot on, the engine admits by
// the limiter's effective figures, shows them in the decision (and so in
// the estimate) and in Status; with autopilot off the limiter is not
// asked.
func TestLimiterGovernsAdmissions(t *testing.T) {
	for _, on := range []bool{true, false} {
		st, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		e := New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, Limiter: fixedLimiter{rate: 3, conc: 50}})
		room := simRoom()
		room.TotalActiveUsers, room.NewUsersPerMinute = 100, 100
		room.Autopilot.Enabled = on
		admitted := 0
		var last usher.Decision
		for i := range 10 {
			d := decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Second))
			if d.Outcome == usher.Admit {
				admitted++
			}
			last = d
		}
		want, wantRate := 10, 100
		if on {
			want, wantRate = 3, 3
		}
		if admitted != want {
			t.Errorf("autopilot %v: %d of 10 admitted at once, want %d", on, admitted, want)
		}
		if last.Settings.NewUsersPerMinute != wantRate {
			t.Errorf("autopilot %v: the decision's settings say %d a minute, want %d", on, last.Settings.NewUsersPerMinute, wantRate)
		}
		if on && (last.Outcome != usher.Wait || !last.WaitKnown || last.EstimatedWait < time.Minute) {
			t.Errorf("the 10th visitor: %v, wait %v (known %v); want a wait of over a minute at 3 a minute", last.Outcome, last.EstimatedWait, last.WaitKnown)
		}
		rs, err := e.Status(context.Background(), &room, t0.Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if on && rs.Slots != 0 {
			t.Errorf("Status: %d slots free, want 0 at the effective 3 a minute", rs.Slots)
		}
	}
}

// TestDecisionCopiesNoSettingsToTheHeap: an admitted visitor's request in
// a room whose autopilot is off allocates once (the context that outlives
// the client), not also a copy of the room's settings for a Limiter that
// is not asked; with the autopilot on, the limited settings may cost one
// more.
func TestDecisionCopiesNoSettingsToTheHeap(t *testing.T) {
	for _, on := range []bool{false, true} {
		st, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		e := New(st, Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, Limiter: fixedLimiter{rate: 1000, conc: 1000}})
		room := simRoom()
		room.TotalActiveUsers, room.NewUsersPerMinute = 1000, 1000
		room.Autopilot.Enabled = on
		tk := decide(t, e, &room, nil, t0).Ticket
		if tk.State != usher.Admitted {
			t.Fatalf("autopilot %v: the first visitor is %v", on, tk.State)
		}
		now := t0.Add(100 * time.Millisecond) // within the counted second: no store call
		allocs := testing.AllocsPerRun(1000, func() {
			if d, err := e.Decide(context.Background(), &room, usher.Visit{Ticket: &tk, Now: now}); err != nil || d.Outcome != usher.Admit {
				t.Fatalf("autopilot %v: %v %v", on, d.Outcome, err)
			}
		})
		want := 1.0
		if on {
			want = 2
		}
		if allocs > want {
			t.Errorf("autopilot %v: an admitted request allocates %v times, want at most %v", on, allocs, want)
		}
	}
}
