package admission

import (
	"math"
	"time"

	"github.com/usherhq/usher"
)

// window returns the index of the draw window holding now: windows are
// refresh intervals on the unix clock, the same on every node.
func window(now time.Time, refresh time.Duration) int64 {
	ms := max(refresh.Milliseconds(), 1)
	return now.UnixMilli() / ms
}

// drewIn reports whether a draw at drewAt falls in now's window.
func drewIn(drewAt, now time.Time, refresh time.Duration) bool {
	return !drewAt.IsZero() && window(drewAt, refresh) == window(now, refresh)
}

// Draw returns the visitor's draw for a window, uniform in [0, 1): a
// function of the sealed visitor id and the window only, so reloading
// cannot re-roll it and every node draws the same (Fastly's seeded
// lottery). It is the fallback of lotteryDraw when the store cannot give
// the window's committed link: such a draw cannot be verified.
func Draw(visitor [8]byte, win int64) float64 {
	var id uint64
	for _, b := range visitor {
		id = id<<8 | uint64(b)
	}
	x := splitmix64(id ^ splitmix64(uint64(win)))
	return float64(x>>11) / (1 << 53)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// estimateRandom returns the 25th, 50th and 75th percentiles of a random
// waiter's wait: with P the chance of one draw (admissions per window over
// live waiters), the draws until admission are geometric, and the p-th
// percentile is n = log(1 - p) / log(1 - P) windows.
func estimateRandom(res usher.AdmitResult, s *usher.Settings) (known bool, p25, p50, p75 time.Duration) {
	live := float64(res.Waiting + 1)
	perWindow := drainRate(res, s) * s.RefreshInterval.Minutes()
	perWindow = max(perWindow, float64(res.Slots))
	if perWindow <= 0 {
		return false, 0, 0, 0
	}
	p := min(perWindow/live, 1)
	at := func(q float64) time.Duration {
		if p >= 1 {
			return s.RefreshInterval
		}
		n := math.Ceil(math.Log(1-q) / math.Log(1-p))
		return time.Duration(max(n, 1)) * s.RefreshInterval
	}
	return true, at(0.25), at(0.5), at(0.75)
}
