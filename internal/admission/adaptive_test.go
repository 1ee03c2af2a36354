package admission

import (
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestAdaptiveCheckIns runs the same long line on simulated time with fixed
// check-ins (max_refresh_interval = refresh_interval) and adaptive ones:
// with adaptive check-ins FIFO stays exact, the position shown is right as
// of every check-in and the store counts exactly the unexpired tickets
// (runSim checks both on every step), a leaver's count ends within the
// longest interval plus its grace, utilisation does not drop, and the line
// checks in far less often.
func TestAdaptiveCheckIns(t *testing.T) {
	room := simRoom()
	room.TotalActiveUsers, room.NewUsersPerMinute = 20, 60
	room.SessionDuration, room.RefreshInterval = 30*time.Second, 5*time.Second
	base := simConfig{
		visitors: 1000, arrivalSpan: time.Minute, abandonFrac: 0.3, patienceMax: 15 * time.Minute,
		browseMin: 10 * time.Second, browseMax: 40 * time.Second, horizon: 45 * time.Minute,
	}
	for seed := uint64(1); seed <= 3; seed++ {
		cfg := base
		cfg.seed = seed
		fixed, adaptive := room, room
		fixed.MaxRefreshInterval = room.RefreshInterval
		adaptive.MaxRefreshInterval = 2 * time.Minute
		cfg.room = fixed
		f := runSim(t, cfg)
		cfg.room = adaptive
		a := runSim(t, cfg)
		t.Logf("seed %d: check-ins %d fixed, %d adaptive (%.2fx); utilisation %.4f fixed, %.4f adaptive; admitted %d fixed, %d adaptive; longest count after a check-in %v fixed, %v adaptive",
			seed, f.checkIns, a.checkIns, float64(a.checkIns)/float64(f.checkIns), f.utilization, a.utilization, f.admittedCount, a.admittedCount, f.longestWindow, a.longestWindow)
		for name, r := range map[string]simResult{"fixed": f, "adaptive": a} {
			if r.inversions != 0 {
				t.Errorf("seed %d, %s: %d FIFO inversions", seed, name, r.inversions)
			}
			if r.maxActive > room.TotalActiveUsers {
				t.Errorf("seed %d, %s: active reached %d, limit %d", seed, name, r.maxActive, room.TotalActiveUsers)
			}
		}
		// Admitted by the horizon: as many, to a visitor in 200. Both
		// modes fill over 99 % of the places, but not with the same
		// visitors (who gives up before its turn depends on when it
		// checks in), and the visitors let in browse for different
		// times, so the same place-seconds admit a visitor or two more
		// or fewer by the horizon: utilisation (below) is the measure
		// that must not drop.
		if a.admittedCount*200 < f.admittedCount*199 {
			t.Errorf("seed %d: %d admitted with adaptive check-ins, %d with fixed", seed, a.admittedCount, f.admittedCount)
		}
		// Utilisation does not drop, seed by seed.
		if a.utilization < f.utilization {
			t.Errorf("seed %d: utilisation %.6f with adaptive check-ins, %.6f with fixed", seed, a.utilization, f.utilization)
		}
		if a.checkIns*3 > f.checkIns {
			t.Errorf("seed %d: %d check-ins with adaptive intervals, %d with fixed: want under a third", seed, a.checkIns, f.checkIns)
		}
		// A leaver counts at most its interval (with jitter, rounded to
		// the whole second as pages refresh: checkInAfter) plus its grace,
		// rounded up to the second, after its last check-in.
		for name, c := range map[string]struct {
			r  simResult
			iv time.Duration
		}{"fixed": {f, room.RefreshInterval}, "adaptive": {a, 2 * time.Minute}} {
			bound := checkInAfter(c.iv, MaxJitter(c.iv)) + Grace(c.iv) + time.Second
			if c.r.longestWindow > bound {
				t.Errorf("seed %d, %s: a waiting ticket counted %v after its check-in, bound %v", seed, name, c.r.longestWindow, bound)
			}
		}
	}
}

// TestIntervalNeverOutrunsTheTurn checks the interval rule over a grid of
// rooms and places: a waiter told to come back after I cannot be admitted
// before 2I (the room cannot admit everyone ahead of it sooner), I is from
// refresh_interval to max_refresh_interval, it grows with the place, and
// random rooms keep refresh_interval.
func TestIntervalNeverOutrunsTheTurn(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tau := range []int{1, 7, 200, 5000} {
		for _, nupm := range []int{1, 60, 3000, 1000000} {
			for _, sd := range []time.Duration{30 * time.Second, 5 * time.Minute, 24 * time.Hour} {
				s := usher.Settings{TotalActiveUsers: tau, NewUsersPerMinute: nupm, SessionDuration: sd,
					RefreshInterval: 20 * time.Second, MaxRefreshInterval: 2 * time.Minute, QueueingMethod: usher.FIFO}
				sched := usher.Schedule{Settings: s}
				prev := time.Duration(0)
				for _, ahead := range []int64{0, 1, 5, 50, 199, 200, 1000, 10000, 1e6, 1e9} {
					iv := interval(ahead, &s, &sched, now)
					if iv < s.RefreshInterval || iv > s.MaxRefreshInterval {
						t.Fatalf("tau %d nupm %d sd %v ahead %d: interval %v out of [%v, %v]", tau, nupm, sd, ahead, iv, s.RefreshInterval, s.MaxRefreshInterval)
					}
					if iv < prev {
						t.Fatalf("tau %d nupm %d sd %v ahead %d: interval %v shorter than %v further ahead", tau, nupm, sd, ahead, iv, prev)
					}
					prev = iv
					// Within 2I (a little less: the admissions of a span
					// count whole minutes and sessions), the room cannot
					// admit ahead+1 visitors.
					if iv > s.RefreshInterval && maxAdmissions(2*iv-time.Millisecond, &s) > ahead {
						t.Fatalf("tau %d nupm %d sd %v ahead %d: interval %v, yet %d could be admitted within %v", tau, nupm, sd, ahead, iv, maxAdmissions(2*iv-time.Millisecond, &s), 2*iv)
					}
				}
				// Before an event's start nobody goes in: a waiter with
				// anyone ahead may wait up to half the time to the start
				// longer, and the front one still checks in at
				// refresh_interval.
				pre := usher.Schedule{Settings: s, Phase: usher.Prequeue, Event: &usher.Event{Start: now.Add(time.Hour)}}
				if iv := interval(1, &s, &pre, now); iv != s.MaxRefreshInterval {
					t.Fatalf("pre-queue an hour before the start: interval %v, want %v", iv, s.MaxRefreshInterval)
				}
				if iv := interval(0, &s, &pre, now); iv != s.RefreshInterval {
					t.Fatalf("pre-queue, first in line: interval %v, want refresh_interval", iv)
				}
				s.QueueingMethod = usher.Random
				if iv := interval(1e6, &s, &sched, now); iv != s.RefreshInterval {
					t.Fatalf("random room: interval %v, want refresh_interval", iv)
				}
			}
		}
	}
}

// TestAdaptiveDecisions follows one waiter far back in a line that does
// not move and one at its front: the far one is told twice its newcomer's
// interval (refresh_interval) at its first check-in, not the
// max_refresh_interval its place alone would allow,
// the ticket's NextCheckIn and its cell agree with the answer, an early
// check-in counts nothing, and once the waiters ahead have left it is told
// to come back at refresh_interval. A random room keeps refresh_interval.
func TestAdaptiveDecisions(t *testing.T) {
	for _, method := range []usher.QueueingMethod{usher.FIFO, usher.Random} {
		t.Run(string(method), func(t *testing.T) {
			e := newEngine(t)
			room := simRoom()
			room.QueueingMethod = method
			room.TotalActiveUsers, room.NewUsersPerMinute, room.SessionDuration = 1, 1, time.Hour
			room.RefreshInterval, room.MaxRefreshInterval = 20*time.Second, 2*time.Minute
			s := &room.Settings
			decide(t, e, &room, nil, t0) // takes the one place for an hour
			var first usher.Ticket
			// 99 waiters arrive in the first second (one arrival bucket,
			// all ahead of the far waiter), the far one the next.
			for i := range 99 {
				d := decide(t, e, &room, nil, t0.Add(time.Duration(i+1)*time.Millisecond))
				if i == 0 {
					first = d.Ticket
				}
			}
			now := t0.Add(time.Second)
			d := decide(t, e, &room, nil, now)
			if d.Outcome != usher.Wait || d.RefreshAfter > s.RefreshInterval+MaxJitter(s.RefreshInterval)+time.Second {
				t.Fatalf("newcomer: %v, told %v, want refresh_interval", d.Outcome, d.RefreshAfter)
			}
			tk := d.Ticket
			now = tk.NextCheckIn
			d = decide(t, e, &room, &tk, now)
			long, short := s.RefreshInterval+MaxJitter(s.RefreshInterval)+time.Second, MaxInterval(s)
			if method == usher.Random {
				if d.RefreshAfter > long {
					t.Fatalf("random room, its check-in: told %v, want refresh_interval", d.RefreshAfter)
				}
				return
			}
			// Its place would allow max_refresh_interval; intervals grow by
			// doubling (the 99 ahead may never check in again).
			grownTo := 2 * tk.NextCheckIn.Sub(tk.CountedAt)
			if grownTo >= short {
				t.Fatalf("test setup: twice the newcomer's interval, %v, reaches max_refresh_interval", grownTo)
			}
			if d.Position != 100 || d.RefreshAfter < grownTo-MaxJitter(grownTo)-time.Second || d.RefreshAfter > grownTo+MaxJitter(grownTo)+time.Second {
				t.Fatalf("far waiter's check-in: position %d, told %v, want about %v (twice its last interval)", d.Position, d.RefreshAfter, grownTo)
			}
			tk = d.Ticket
			if got := tk.NextCheckIn.Sub(now); got != d.RefreshAfter {
				t.Fatalf("ticket says %v, answer %v", got, d.RefreshAfter)
			}
			if want := usher.CeilSecond(tk.NextCheckIn.Add(Grace(grownTo))).Unix(); tk.Cell != want {
				t.Fatalf("cell %d, want %d (the interval's check-in plus its grace)", tk.Cell, want)
			}
			// A check-in half its interval early counts nothing.
			at := now.Add(d.RefreshAfter / 2)
			early := decide(t, e, &room, &tk, at)
			if !early.Replay || early.TicketChanged || early.RefreshAfter > tk.NextCheckIn.Sub(at)+time.Second {
				t.Fatalf("early check-in: replay %v, changed %v, told %v", early.Replay, early.TicketChanged, early.RefreshAfter)
			}
			// The front waiter checks in at refresh_interval.
			fd := decide(t, e, &room, &first, first.NextCheckIn)
			if fd.Position != 1 || fd.RefreshAfter > long {
				t.Fatalf("front waiter: position %d, told %v", fd.Position, fd.RefreshAfter)
			}
			// Everyone ahead leaves (never checks in again); once their
			// cells expired, the far waiter is at the front and told so.
			now = tk.NextCheckIn
			d = decide(t, e, &room, &tk, now)
			if d.Position != 1 || d.RefreshAfter > long {
				t.Fatalf("after the line ahead left: position %d, told %v, want refresh_interval", d.Position, d.RefreshAfter)
			}
		})
	}
}

// TestIntervalsGrowByDoubling: a waiter's interval is at most twice the
// one its ticket was last given, never below refresh_interval, and reaches
// what its place allows after a few check-ins.
func TestIntervalsGrowByDoubling(t *testing.T) {
	s := usher.Settings{RefreshInterval: 2 * time.Second, MaxRefreshInterval: 2 * time.Minute}
	last := s.RefreshInterval
	var steps []time.Duration
	for range 10 {
		tk := usher.Ticket{CountedAt: t0, NextCheckIn: t0.Add(last)}
		iv := grown(MaxInterval(&s), &tk, &s)
		if iv > 2*last || iv < s.RefreshInterval {
			t.Fatalf("after %v: %v", last, iv)
		}
		steps = append(steps, iv)
		last = iv
	}
	if last != MaxInterval(&s) {
		t.Fatalf("intervals %v never reached max_refresh_interval", steps)
	}
	if len(steps) < 6 || steps[5] != MaxInterval(&s) || steps[4] == MaxInterval(&s) {
		t.Fatalf("intervals %v: want 4s, 8s, ... reaching 2m at the sixth check-in", steps)
	}
	// A ticket from before adaptive check-ins (or with no next check-in)
	// starts from refresh_interval.
	if iv := grown(time.Minute, &usher.Ticket{}, &s); iv != s.RefreshInterval {
		t.Fatalf("no last interval: %v", iv)
	}
}
