package admission

import (
	"time"

	"github.com/usherhq/usher"
)

// estimate returns the expected wait of a waiter after a decision that kept
// it waiting. A waiter with fewer live waiters ahead than free slots goes
// in at its next check-in. Otherwise the people ahead beyond the free slots
// drain at the admission rate (see drainRate); with no admission in the
// last minute the wait is unknown.
func estimate(res usher.AdmitResult, s *usher.Settings, refresh time.Duration) (bool, time.Duration) {
	if res.Ahead < res.Slots {
		return true, refresh
	}
	rate := drainRate(res, s)
	if rate <= 0 {
		return false, 0
	}
	before := float64(res.Ahead + 1 - res.Slots)
	return true, time.Duration(before / rate * float64(time.Minute))
}

// drainRate is the expected admissions per minute while a queue stands:
// the admissions of the last minute, but never more than the rate limit
// nor than the room can sustain, total_active_users per session duration
// (every admitted visitor holds its place at least that long). The cap
// matters when a queue has just formed: the last minute then holds the
// burst that filled the room, not the pace at which it empties.
func drainRate(res usher.AdmitResult, s *usher.Settings) float64 {
	rate := float64(min(res.AdmittedLastMinute, int64(s.NewUsersPerMinute)))
	if s.SessionDuration > 0 {
		rate = min(rate, float64(s.TotalActiveUsers)/s.SessionDuration.Minutes())
	}
	return rate
}
