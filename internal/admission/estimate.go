package admission

import (
	"math"
	"time"

	"github.com/usherhq/usher"
)

// The estimated wait of a FIFO waiter (see docs/admission.md) comes from
// two sources:
//
//   - the serving counter: how fast the live waiters ahead of a place
//     have actually been leaving the line (admitted, or gone), measured by
//     following the people ahead of markers placed in the line (flows).
//     It knows what the limits do not: how long visitors browse, how many
//     give up.
//   - a forecast from the limits in force: the free slots, the sessions
//     that end (total_active_users per the least a session lasts) and the
//     rate window, whose admissions leave it at known seconds. It is what a
//     line that has just formed has (a flash crowd): nobody has been served
//     from it yet.
//
// The serving counter's rate takes over as its span grows to servingSpan.
const (
	servingSpan = time.Minute
	// servingMin is the shortest span a marker must have been followed.
	servingMin = 10 * time.Second
	// servingMax is the longest span a marker is followed.
	servingMax = 10 * time.Minute
	// forecastSteps is how many seconds the forecast walks one by one;
	// beyond, the line drains at the long-run rate.
	forecastSteps = 600
)

// fifoWait returns the expected wait of a FIFO waiter of room with the
// counts of res, under s, told to check in again after refresh: the time
// until the capacity freed from now on covers it and everyone ahead,
// plus the half check-in interval it then takes to come back. cold says
// the serving counter had no weight in it: the forecast from the limits,
// scaled by the room's learned factor (learn.go), is all it rests on.
func (e *Engine) fifoWait(room string, res usher.AdmitResult, s *usher.Settings, refresh time.Duration, now time.Time) (known bool, wait time.Duration, cold bool) {
	// A marker is followed through the check-ins of its bucket's waiters,
	// which come as often as their adaptive intervals say.
	fresh := max(2*s.RefreshInterval, MaxInterval(s)) + 2*time.Second
	// A line nobody has waited in for two of those has ended: the next
	// one reads the room's prior afresh.
	factor := e.lines.factor(room, now, 2*fresh, e.opts.Prior)
	if res.Ahead < res.Slots {
		return true, refresh, false
	}
	come := s.RefreshInterval / 4 // near the front, check-ins come every half interval
	need := res.Ahead + 1
	raw := e.forecast(room, res, s, now, need)
	wait = scaleWait(raw, factor)
	cold = true
	if sv, ok := e.flow.clearing(room, now, fresh, servingMax); ok && sv.span >= servingMin && !e.noServing {
		// Blend the rates, not the times: a line that has only begun to
		// move (a serving counter that saw mostly the stall before the
		// first sessions ended) must not stretch the wait without bound.
		beyond := float64(need - min(res.Slots, need))
		if served, ok := sv.served(beyond, res.AdmittedLastMinute); ok && served > 0 {
			forecast := beyond / max(wait.Seconds(), 1e-3)
			measured := beyond / served.Seconds()
			w := min(sv.span.Seconds()/servingSpan.Seconds(), 1)
			if r := w*measured + (1-w)*forecast; r > 0 {
				wait = time.Duration(beyond / r * float64(time.Second))
				cold = w <= 0
			}
		}
	}
	if cold {
		// The whole page is the forecast's, scaled: so what is announced
		// over the factor is what the limits forecast (learn.go).
		return true, scaleWait(raw+come, factor), true
	}
	return true, wait + come, false
}

// scaleWait returns d scaled by f.
func scaleWait(d time.Duration, f float64) time.Duration {
	if f == 1 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// forecast returns how long until the room can have let need more
// visitors in, from its limits alone: the smallest t at which both
//
//	concurrency: total - active + total/hold * t
//	rate:        new_users_per_minute - (the last minute's admissions still in the window at t), per minute
//
// reach need, where hold is the least a session is counted
// (usher.SessionHold). The rate window's
// admissions leave it at the seconds this engine saw them made (scaled to
// the store's count, which includes other nodes').
func (e *Engine) forecast(room string, res usher.AdmitResult, s *usher.Settings, now time.Time, need int64) time.Duration {
	hold := usher.SessionHold(s)
	total, perMin := float64(s.TotalActiveUsers), float64(s.NewUsersPerMinute)
	turnover := math.Inf(1) // per second
	if hold > 0 {
		turnover = total / hold.Seconds()
	}
	free := max(total-float64(res.Active), 0)
	active := float64(res.Active)
	last := float64(res.AdmittedLastMinute)
	p := e.flow.profile(room, now)
	// rate(t) is the admissions the rate limit allows in (now, now+t].
	rate := func(t int) float64 {
		if perMin <= 0 {
			return math.Inf(1)
		}
		// Any 60 s holds at most perMin: (now, now+t] is k whole minutes
		// and a part of x seconds, in which the window still holds what
		// was admitted in the last minute and not yet out.
		x := t
		if t > 0 {
			x = (t-1)%60 + 1
		}
		still := last * float64(60-x) / 60
		if p.windowOK {
			still = last * p.window[x]
		}
		return perMin*float64((t-x)/60) + max(perMin-still, 0)
	}
	// conc(t) is the places free by now+t: free now, the running sessions
	// that end by then (at their counted end, as far as this engine has
	// seen them, or spread over hold), and those let in from now on, which
	// turn over after hold.
	conc := func(t int) float64 {
		ft := float64(t)
		if !p.endedOK {
			return free + turnover*ft
		}
		return free + active*p.ended[min(t, profileSteps-1)] + turnover*max(0, ft-hold.Seconds())
	}
	cap := func(t int) float64 { return min(conc(t), rate(t)) }
	n := float64(need)
	if cap(forecastSteps) < n {
		long := min(turnover, perMin/60)
		if perMin <= 0 {
			long = turnover
		}
		if long <= 0 || math.IsInf(long, 1) {
			return forecastSteps * time.Second
		}
		more := (n - cap(forecastSteps)) / long
		return time.Duration((forecastSteps + more) * float64(time.Second))
	}
	// cap is non-decreasing: the first second at which it covers need.
	lo, hi := 0, forecastSteps
	for lo < hi {
		mid := (lo + hi) / 2
		if cap(mid) >= n {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return time.Duration(lo) * time.Second
}

// drainRate is the expected admissions per minute while a queue stands:
// the admissions of the last minute, but never more than the rate limit
// nor than the room can sustain, total_active_users per session duration
// (every admitted visitor holds its place at least that long). It tells a
// waiter whether it is near the front, and paces random queueing's draws.
func drainRate(res usher.AdmitResult, s *usher.Settings) float64 {
	rate := float64(min(res.AdmittedLastMinute, int64(s.NewUsersPerMinute)))
	if s.SessionDuration > 0 {
		rate = min(rate, float64(s.TotalActiveUsers)/s.SessionDuration.Minutes())
	}
	return rate
}
