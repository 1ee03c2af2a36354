package admission

import (
	"time"

	"github.com/usherhq/usher"
)

// estimate returns the expected wait of a waiter after a decision that kept
// it waiting. A waiter with fewer live waiters ahead than free slots goes
// in at its next check-in. Otherwise the people ahead beyond the free slots
// drain at the recent admission rate (admissions in the last minute, never
// above the room's rate limit); with no admission in the last minute the
// wait is unknown.
func estimate(res usher.AdmitResult, s *usher.Settings, refresh time.Duration) (bool, time.Duration) {
	if res.Ahead < res.Slots {
		return true, refresh
	}
	rate := min(res.AdmittedLastMinute, int64(s.NewUsersPerMinute))
	if rate <= 0 {
		return false, 0
	}
	before := res.Ahead + 1 - res.Slots
	return true, time.Duration(before) * time.Minute / time.Duration(rate)
}
