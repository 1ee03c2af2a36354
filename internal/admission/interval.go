package admission

import (
	"time"

	"github.com/usherhq/usher"
)

// DefaultMaxRefreshInterval is a room's max_refresh_interval when it sets
// none.
const DefaultMaxRefreshInterval = 2 * time.Minute

// MaxInterval is the longest check-in interval a waiter of a room with
// settings s is given: max_refresh_interval (DefaultMaxRefreshInterval when
// unset), never less than refresh_interval.
func MaxInterval(s *usher.Settings) time.Duration {
	m := s.MaxRefreshInterval
	if m <= 0 {
		m = DefaultMaxRefreshInterval
	}
	return max(s.RefreshInterval, m)
}

// maxAdmissions is the most visitors a room with settings s can admit in
// a span of d, whatever happens in it (short of an operator changing the
// settings or ending sessions): new_users_per_minute in any minute, and
// total_active_users at once, each of whom holds its place for at least
// session_duration.
func maxAdmissions(d time.Duration, s *usher.Settings) int64 {
	d = max(d, 0)
	n := int64(s.NewUsersPerMinute) * (int64(d/time.Minute) + 1)
	if s.SessionDuration > 0 {
		n = min(n, int64(s.TotalActiveUsers)*(int64(d/s.SessionDuration)+1))
	}
	return n
}

// soonest is the least time within which a waiter with ahead live waiters
// before it could be admitted in a room with settings s: the span in which
// the room could first admit ahead+1 visitors (maxAdmissions). Any
// estimate of the wait, which drains at most as fast, is at least as long.
func soonest(ahead int64, s *usher.Settings) time.Duration {
	need := ahead + 1
	var t time.Duration
	if n := int64(s.NewUsersPerMinute); n > 0 {
		t = time.Duration((need+n-1)/n-1) * time.Minute
	}
	if n := int64(s.TotalActiveUsers); n > 0 && s.SessionDuration > 0 {
		// Saturate rather than overflow: a span past the cap is the cap.
		k := (need+n-1)/n - 1
		if k > int64(24*time.Hour/s.SessionDuration) {
			return 24 * time.Hour
		}
		t = max(t, time.Duration(k)*s.SessionDuration)
	}
	return t
}

// interval returns the check-in interval of a FIFO waiter with ahead live
// waiters before it, before jitter: half the least time in which it could
// be admitted, from refresh_interval up to MaxInterval. A waiter told to
// come back after I is back before its turn can come, since its turn is at
// least 2I away; a waiter who leaves stops counting at most I + Grace(I)
// after its last check-in, before the front of the line can reach it.
// Random rooms and the fail modes keep refresh_interval (see
// docs/admission.md).
func interval(ahead int64, s *usher.Settings, sched *usher.Schedule, now time.Time) time.Duration {
	if s.QueueingMethod == usher.Random || ahead <= 0 {
		return s.RefreshInterval
	}
	t := soonest(ahead, s)
	if sched.Phase == usher.Prequeue && sched.Event != nil {
		// Nobody goes in before the start.
		t += max(sched.Event.Start.Sub(now), 0)
	}
	return min(max(t/2, s.RefreshInterval), MaxInterval(s))
}

// aheadAtLeast is the fewest live waiters that can be ahead of a waiter at
// now, from its ticket alone: the position it was shown at its last
// check-in less the most the room could have admitted since. Leavers ahead
// who stopped counting meanwhile may make it fewer still; the check-in's
// answer corrects for them (see Decide).
func aheadAtLeast(tk *usher.Ticket, s *usher.Settings, now time.Time) int64 {
	if tk.Position <= 1 || tk.CountedAt.IsZero() {
		return 0
	}
	return max(0, tk.Position-1-maxAdmissions(now.Sub(tk.CountedAt), s))
}

// MaxAdmissions is maxAdmissions, Soonest is soonest, and LongestCheckIn
// is how long after a check-in a waiter given MaxInterval (a far-back
// waiter) with ticket jitter is told to come back: the engine's own rules,
// with which the simulator's aggregate mode proves its parked check-ins.
func MaxAdmissions(d time.Duration, s *usher.Settings) int64 { return maxAdmissions(d, s) }

// Soonest: see MaxAdmissions.
func Soonest(ahead int64, s *usher.Settings) time.Duration { return soonest(ahead, s) }

// LongestCheckIn: see MaxAdmissions.
func LongestCheckIn(s *usher.Settings, jitter time.Duration) time.Duration {
	iv := MaxInterval(s)
	return checkInAfter(iv, scaledJitter(jitter, iv, s.RefreshInterval))
}

// scaledJitter is a ticket's jitter (drawn for refresh_interval) scaled to
// an interval of iv: the same fraction of it either way.
func scaledJitter(jitter, iv, refresh time.Duration) time.Duration {
	if refresh <= 0 || iv == refresh {
		return jitter
	}
	return time.Duration(float64(jitter) * float64(iv) / float64(refresh))
}

// grown bounds a waiter's next interval iv by twice the interval its
// ticket was last given (never below refresh_interval): intervals grow
// over several check-ins rather than at once. A position can be inflated
// by waiters that will never check in (a flood of visits without cookies
// holds places until their first check-in is overdue, a refresh interval
// and a grace); a waiter told a long interval on such a position would sit
// out the room's free places. Growing by doubling, it comes back within
// twice its last interval and sees the line as it is, while a waiter far
// back in a real line still reaches max_refresh_interval after a few
// check-ins.
func grown(iv time.Duration, tk *usher.Ticket, s *usher.Settings) time.Duration {
	last := tk.NextCheckIn.Sub(tk.CountedAt)
	return min(iv, max(s.RefreshInterval, 2*last))
}
