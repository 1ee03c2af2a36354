package bench

import (
	"math"
	"slices"
	"sort"
	"time"

	"github.com/usherhq/usher"
)

// Sample is the state of a run at one moment, for plots.
type Sample struct {
	// T is the time since the timeline's start.
	T time.Duration `json:"t"`
	// Active is the number of sessions that hold at T.
	Active int `json:"active"`
	// Waiting is the number of visitors waiting at T.
	Waiting int `json:"waiting"`
	// AdmittedPerMinute is the number of admissions in (T-60s, T].
	AdmittedPerMinute int `json:"admitted_per_minute"`
}

// Series samples tl every step (zero: one second) from its start to its
// end, both included, with the definitions of Report.
func Series(tl *Timeline, lim Limits, step time.Duration) []Sample {
	if step <= 0 {
		step = time.Second
	}
	ix := newIndex(tl, lim)
	var out []Sample
	for t := ix.from; t <= ix.to; t += int64(step) {
		out = append(out, Sample{
			T:                 time.Duration(t - ix.from),
			Active:            ix.active(t),
			Waiting:           ix.waiting(t),
			AdmittedPerMinute: ix.admittedLastMinute(t),
		})
	}
	return out
}

// index holds a timeline's intervals as sorted unix nanoseconds, so that
// counts at any moment take a binary search.
type index struct {
	from, to           int64 // the timeline's start and end
	sessStart, sessEnd []int64
	admitted           []int64 // admission times (answers), admissions anew included
	first              []int64 // first admission times, as admissions
	waitStart, waitEnd []int64
	admissions         []admission
}

// admission is one admitted visitor, for the inversion count.
type admission struct {
	at         int64 // admission answer
	arrivalSec int64 // unix second the visitor's first request was sent
}

const minute = int64(time.Minute)

func newIndex(tl *Timeline, lim Limits) *index {
	ix := &index{from: math.MaxInt64, to: math.MinInt64}
	seen := func(t time.Time) {
		if !t.IsZero() {
			ix.from = min(ix.from, t.UnixNano())
			ix.to = max(ix.to, t.UnixNano())
		}
	}
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		seen(v.Arrival)
		seen(v.Left)
		seen(v.Abandoned)
		if !v.Admitted.IsZero() {
			seen(v.Admitted)
			for _, s := range sessions(v, lim, true) {
				if s.end > s.start {
					ix.sessStart = append(ix.sessStart, s.start)
					ix.sessEnd = append(ix.sessEnd, s.end)
				}
				// A visitor admitted again is admitted again in the
				// room's rate too.
				ix.admitted = append(ix.admitted, s.start)
			}
			// Only its first admission is in arrival order: a visitor
			// admitted again arrived again when its session ended.
			ix.first = append(ix.first, v.Admitted.UnixNano())
			ix.admissions = append(ix.admissions, admission{at: v.Admitted.UnixNano(), arrivalSec: v.arrivalSent().Unix()})
		}
		if !v.Arrival.IsZero() {
			if s, e := v.arrivalAck().UnixNano(), waitEnd(v); e > s {
				ix.waitStart = append(ix.waitStart, s)
				ix.waitEnd = append(ix.waitEnd, e)
			}
			// Back in line after a session: usher counts it a waiter
			// again until it is admitted anew or leaves.
			for _, q := range v.Requeues {
				if s, e := q.UnixNano(), rewaitEnd(v, q); e > s {
					ix.waitStart = append(ix.waitStart, s)
					ix.waitEnd = append(ix.waitEnd, e)
				}
			}
		}
	}
	if !tl.Start.IsZero() {
		ix.from = tl.Start.UnixNano()
	}
	if !tl.End.IsZero() {
		ix.to = tl.End.UnixNano()
	}
	if ix.from > ix.to {
		ix.from, ix.to = 0, -1
	}
	for _, s := range [][]int64{ix.sessStart, ix.sessEnd, ix.admitted, ix.first, ix.waitStart, ix.waitEnd} {
		slices.Sort(s)
	}
	slices.SortFunc(ix.admissions, func(a, b admission) int { return compare(a.at, b.at) })
	return ix
}

func compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// countTo is the number of elements of sorted s that are <= t.
func countTo(s []int64, t int64) int {
	return sort.Search(len(s), func(i int) bool { return s[i] > t })
}

// active is the number of sessions that hold at t.
func (ix *index) active(t int64) int { return countTo(ix.sessStart, t) - countTo(ix.sessEnd, t) }

// waiting is the number of visitors waiting at t.
func (ix *index) waiting(t int64) int { return countTo(ix.waitStart, t) - countTo(ix.waitEnd, t) }

// admittedLastMinute is the number of admissions in (t-60s, t].
func (ix *index) admittedLastMinute(t int64) int {
	return countTo(ix.admitted, t) - countTo(ix.admitted, t-minute)
}

// free is the room's free slots at t: max(0, min(total - active, per
// minute - admitted in the last minute)); a per-minute limit of zero or
// less does not limit.
func (ix *index) free(t int64, lim Limits) int {
	f := lim.TotalActiveUsers - ix.active(t)
	if lim.NewUsersPerMinute > 0 {
		f = min(f, lim.NewUsersPerMinute-ix.admittedLastMinute(t))
	}
	return max(f, 0)
}

// session is one of a visitor's sessions, in unix nanoseconds: from the
// answer that admitted it (start; sent is when that request was sent) to
// its end.
type session struct{ sent, start, end int64 }

// sessions are v's sessions by usher's rule. A session holds from its
// admitting answer to ceil(last request + session duration), or
// ceil(admission + session duration) without renewal; a request that comes
// after that end, or after the visitor was told to wait, reaches a session
// that has ended: usher decides it as a new visitor's, so the origin's
// answer to it is a new admission and starts a new session. A request
// counts from when it was sent: usher saw it then or later, so the session
// ends then or later (a request sent before the computed end renews; one
// sent after it may have reached a session that still held, and the report
// then counts the gap as free, never as taken). With capped, a requeue ends
// the session it came in.
func sessions(v *Visitor, lim Limits, capped bool) []session {
	if v.Admitted.IsZero() {
		return nil
	}
	var out []session
	cur := session{sent: v.admittedSent().UnixNano(), start: v.Admitted.UnixNano()}
	last := v.admittedSent()
	end := usher.CeilSecond(last.Add(lim.SessionDuration))
	requeue := v.RequeuedAt
	close := func() {
		cur.end = end.UnixNano()
		if capped && !requeue.IsZero() && requeue.UnixNano() >= cur.start && requeue.Before(end) {
			cur.end = requeue.UnixNano()
		}
		out = append(out, cur)
	}
	for i, r := range v.Requests {
		if !r.After(last) {
			continue // the admitting request
		}
		afterRequeue := !requeue.IsZero() && requeue.UnixNano() >= cur.start && r.After(requeue)
		if r.Before(end) && !afterRequeue {
			if !lim.DisableSessionRenewal && r.After(last) {
				last = r
				end = usher.CeilSecond(r.Add(lim.SessionDuration))
			}
			continue
		}
		close()
		if afterRequeue {
			requeue = time.Time{}
		}
		cur = session{sent: r.UnixNano(), start: v.requestAck(i).UnixNano()}
		last = r
		end = usher.CeilSecond(r.Add(lim.SessionDuration))
	}
	close()
	return out
}

// sessionEnd is when the session v had when it was first requeued ends (or
// its first session's, when it never was); see sessions.
func sessionEnd(v *Visitor, lim Limits) time.Time {
	ss := sessions(v, lim, false)
	if len(ss) == 0 {
		return time.Time{}
	}
	end := ss[0].end
	for _, s := range ss {
		if !v.RequeuedAt.IsZero() && s.start <= v.RequeuedAt.UnixNano() {
			end = s.end
		}
	}
	return time.Unix(0, end)
}

// rewaitEnd is when v, back in line from q, stopped waiting: the answer
// to its first request after q that the origin answered, or when it left;
// the largest time when neither came.
func rewaitEnd(v *Visitor, q time.Time) int64 {
	for i, r := range v.Requests {
		if r.After(q) {
			return v.requestAck(i).UnixNano()
		}
	}
	if !v.Left.IsZero() {
		return v.Left.UnixNano()
	}
	return math.MaxInt64
}

// waitEnd is when v stopped waiting: admitted, abandoned or gone,
// whichever came first; the largest time when none did.
func waitEnd(v *Visitor) int64 {
	end := int64(math.MaxInt64)
	for _, t := range []time.Time{v.Admitted, v.Abandoned, v.Left} {
		if !t.IsZero() {
			end = min(end, t.UnixNano())
		}
	}
	return end
}
