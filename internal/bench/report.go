package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Limits are the room's settings the report measures against.
type Limits struct {
	// TotalActiveUsers is the room's total_active_users.
	TotalActiveUsers int
	// NewUsersPerMinute is the room's new_users_per_minute (zero or less:
	// no rate limit).
	NewUsersPerMinute int
	// SessionDuration is the room's session_duration.
	SessionDuration time.Duration
	// RefreshInterval is the room's refresh_interval (zero: no
	// max_idle_ratio).
	RefreshInterval time.Duration
	// DisableSessionRenewal is the room's disable_session_renewal.
	DisableSessionRenewal bool
}

// SampleEvery is the step at which Report samples a timeline for
// utilisation.
const SampleEvery = 100 * time.Millisecond

// Result is the measured figures of a run. Durations are in seconds.
//
// Admission time is when the visitor got its first origin answer; a
// session holds from it until ceil(last request + session duration)
// (usher's rule; ceil(admission + session duration) without renewal), or
// until a requeue; a visitor back after its session ended starts a new
// session (see sessions). Waiting is from the first answer of a visitor
// that is not yet admitted, abandoned or gone, and again from each requeue
// to its next admission or departure.
//
// Where a request's moment at usher matters, the report counts only what is
// certain given that usher saw it between its sending and its answer: a
// session counts from the admitting answer to ceil(the last request's
// sending + session duration); admissions count as one 60 s window only if
// the last answer came less than 60 s after the first sending; a visitor B
// arrived in a later second than A only if B sent its first request in a
// later second than A got its first answer. With no latency (sent = answer
// time) these are the plain definitions.
type Result struct {
	// Visitors is the number of visitors of the run.
	Visitors int `json:"visitors"`
	// Admitted, Abandoned and GaveUp count visitors; Unfinished counts those
	// still there at the end (or who never arrived).
	Admitted   int `json:"admitted"`
	Abandoned  int `json:"abandoned"`
	GaveUp     int `json:"gave_up"`
	Unfinished int `json:"unfinished"`
	// Errors counts failed requests; ErrorCounts by kind.
	Errors      int            `json:"errors"`
	ErrorCounts map[string]int `json:"error_counts,omitempty"`
	// DurationS is the timeline's length.
	DurationS float64 `json:"duration_s"`

	// MaxActive is the most sessions holding at once; MaxActiveRatio
	// divides it by total_active_users (over 1 breaks invariant 1).
	MaxActive      int     `json:"max_active"`
	MaxActiveRatio float64 `json:"max_active_ratio"`
	// MaxRate is the most admissions in one 60 s window, sliding (two
	// admissions exactly 60 s apart are in no common window); MaxRateRatio
	// divides it by new_users_per_minute.
	MaxRate      int     `json:"max_rate"`
	MaxRateRatio float64 `json:"max_rate_ratio"`

	// Utilization is 1 - mean(free)/total_active_users over samples every
	// 100 ms at which at least one visitor waits, with free(t) = max(0,
	// min(total - active(t), per minute - admissions in (t-60s, t])). It is
	// zero when nobody ever waited (QueueS is then zero).
	Utilization float64 `json:"utilization"`
	// QueueS is the time during which at least one visitor waited.
	QueueS float64 `json:"queue_s"`
	// MaxIdleS is the longest stretch during which visitors waited while a
	// slot was free; MaxIdleRatio divides it by the refresh interval
	// (invariant 4 wants it near 1 or less).
	MaxIdleS     float64 `json:"max_idle_s"`
	MaxIdleRatio float64 `json:"max_idle_ratio"`

	// FIFOInversions counts visitors A who got a waiting answer after some
	// visitor B that arrived in a later second had been admitted; each A
	// once.
	FIFOInversions int `json:"fifo_inversions"`

	// WaitP50S, WaitP95S and WaitP99S are percentiles (nearest rank) of
	// admission - arrival over admitted visitors.
	WaitP50S float64 `json:"wait_p50_s"`
	WaitP95S float64 `json:"wait_p95_s"`
	WaitP99S float64 `json:"wait_p99_s"`
	// ETAErrorMedianS and ETAErrorP90S are percentiles of |announced -
	// actual| over ETAVisitors: the admitted visitors who waited at least
	// two refresh intervals, where announced is the wait (waitTimeSeconds)
	// on the visitor's first waiting answer and actual the time from that
	// answer to admission. A first answer that announced no wait
	// (waitTimeKnown false) counts in ETAUnknown instead.
	ETAErrorMedianS float64 `json:"eta_error_median_s"`
	ETAErrorP90S    float64 `json:"eta_error_p90_s"`

	// RequeuedWhileBrowsing counts admitted visitors sent back to the queue
	// while their session certainly held (invariant 7).
	RequeuedWhileBrowsing int `json:"requeued_while_browsing"`

	// WaitP90S is the 90th percentile of the waits, as WaitP50S.
	WaitP90S float64 `json:"wait_p90_s"`
	// ETAErrorMedianPct and ETAErrorP90Pct are the median and 90th
	// percentile of each of those visitors' error as a percentage of its
	// own actual wait, 100 * |announced - actual| / actual; zero when no
	// visitor counts.
	ETAErrorMedianPct float64 `json:"eta_error_median_pct"`
	ETAErrorP90Pct    float64 `json:"eta_error_p90_pct"`
	// ETAVisitors counts the visitors the errors are over; ETAUnknown the
	// admitted visitors who waited as long but whose first waiting answer
	// announced no wait.
	ETAVisitors int `json:"eta_visitors"`
	ETAUnknown  int `json:"eta_unknown"`
	// WaitRangeCoverage is, for a random room, the share of those visitors
	// whose actual wait fell inside the range (25th to 75th percentile)
	// announced on their first waiting answer; absent when none announced
	// a range. An honest range covers about half.
	WaitRangeCoverage *float64 `json:"wait_range_coverage,omitempty"`
	// QueuePeak is the most visitors waiting at once, first reached
	// QueuePeakAtS seconds after the timeline's start.
	QueuePeak    int     `json:"queue_peak"`
	QueuePeakAtS float64 `json:"queue_peak_at_s"`
	// QueueDrained reports that nobody waited at the end of the timeline;
	// QueueDrainedS is when the last waiter stopped waiting, in seconds
	// from its start (zero when nobody waited or the queue did not drain;
	// SimSummary's DrainedS).
	QueueDrained  bool    `json:"queue_drained"`
	QueueDrainedS float64 `json:"queue_drained_s"`
	// BoundBy is the limit that held the line back while a queue existed:
	// "concurrency" when total_active_users left no more free slots than
	// new_users_per_minute did at most of the samples Utilization takes,
	// "rate" otherwise; empty when nobody waited.
	BoundBy string `json:"bound_by,omitempty"`
	// Warnings say, in words, why the figures may measure nothing (nobody
	// waited, nobody was let in, every request failed, visitors were still
	// there when the run stopped); empty when there is nothing to say.
	Warnings []string `json:"warnings,omitempty"`
}

// The values of Result.BoundBy.
const (
	BoundByConcurrency = "concurrency"
	BoundByRate        = "rate"
)

// Report measures tl against lim.
func Report(tl *Timeline, lim Limits) Result {
	ix := newIndex(tl, lim)
	res := Result{Visitors: len(tl.Visitors)}
	var waits []time.Duration
	var eta etaErrors
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		res.Errors += len(v.Errors)
		switch {
		case !v.Admitted.IsZero():
			res.Admitted++
			waits = append(waits, v.Admitted.Sub(v.arrivalSent()))
			eta.add(v, lim)
			if !v.RequeuedAt.IsZero() && v.RequeuedAt.Before(sessionEnd(v, lim)) {
				res.RequeuedWhileBrowsing++
			}
		case !v.Abandoned.IsZero():
			res.Abandoned++
		}
		if v.GaveUp {
			res.GaveUp++
		}
		if v.Left.IsZero() {
			res.Unfinished++
		}
	}
	if res.Errors > 0 {
		res.ErrorCounts = tl.ErrorCounts()
	}
	if ix.to >= ix.from {
		res.DurationS = seconds(time.Duration(ix.to - ix.from))
	}
	res.MaxActive = maxActive(ix)
	res.MaxRate = maxRate(tl, lim)
	res.MaxActiveRatio = ratio(float64(res.MaxActive), float64(lim.TotalActiveUsers))
	res.MaxRateRatio = ratio(float64(res.MaxRate), float64(lim.NewUsersPerMinute))
	utilization(ix, lim, &res)
	res.FIFOInversions = fifoInversions(tl, ix)
	res.WaitP50S = seconds(percentile(waits, 50))
	res.WaitP95S = seconds(percentile(waits, 95))
	res.WaitP99S = seconds(percentile(waits, 99))
	res.WaitP90S = seconds(percentile(waits, 90))
	eta.report(&res)
	queue(ix, &res)
	res.Warnings = warnings(tl, &res)
	return res
}

// queue fills QueuePeak, QueuePeakAtS, QueueDrained and QueueDrainedS. The
// queue is longest at some visitor's start of waiting.
func queue(ix *index, res *Result) {
	res.QueueDrained = true
	for _, s := range ix.waitStart {
		if n := ix.waiting(s); n > res.QueuePeak {
			res.QueuePeak, res.QueuePeakAtS = n, seconds(time.Duration(s-ix.from))
		}
	}
	if n := len(ix.waitEnd); n > 0 {
		last := ix.waitEnd[n-1] // sorted
		if last == math.MaxInt64 || last > ix.to {
			res.QueueDrained = false
		} else {
			res.QueueDrainedS = seconds(time.Duration(last - ix.from))
		}
	}
}

// warnings says why res may measure nothing.
func warnings(tl *Timeline, res *Result) []string {
	var w []string
	arrived := 0
	for i := range tl.Visitors {
		if !tl.Visitors[i].Arrival.IsZero() {
			arrived++
		}
	}
	switch {
	case res.Visitors == 0:
		return []string{"no visitors: the run measured nothing"}
	case arrived == 0:
		return []string{"no request got an answer: the run measured nothing; is usher running at the target?"}
	}
	if res.QueuePeak == 0 {
		w = append(w, "nobody waited: the room never filled, so utilisation and waits measure nothing; raise the arrivals or lower the limits")
	}
	if res.Admitted == 0 {
		w = append(w, "nobody was admitted: the limits, waits and estimates measure nothing; is the room letting anyone in (queue_all, reject, an event not started, errors)?")
	}
	if res.Errors > 0 {
		w = append(w, fmt.Sprintf("%s failed (%s)", plural(res.Errors, "request", "requests"), errorKinds(res.ErrorCounts)))
	}
	if res.Unfinished > 0 {
		w = append(w, fmt.Sprintf("%s still there when the run stopped (or never got an answer): their waits are not counted", plural(res.Unfinished, "visitor was", "visitors were")))
	}
	return w
}

// maxActive is the most sessions holding at once; it is reached at some
// session start.
func maxActive(ix *index) int {
	best := 0
	for _, s := range ix.sessStart {
		best = max(best, ix.active(s))
	}
	return best
}

// maxRate is the largest set of admissions certainly inside one 60 s
// window: every one sent at or after some admission's sending s, and
// answered before s + 60 s.
func maxRate(tl *Timeline, lim Limits) int {
	type span struct{ sent, recv int64 }
	var spans []span
	for i := range tl.Visitors {
		for _, s := range sessions(&tl.Visitors[i], lim, false) {
			spans = append(spans, span{s.sent, s.start})
		}
	}
	slices.SortFunc(spans, func(a, b span) int { return compare(a.sent, b.sent) })
	best := 0
	for i, a := range spans {
		n := 0
		for _, b := range spans[i:] {
			if b.sent >= a.sent+minute {
				break
			}
			if b.recv < a.sent+minute {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}

// utilization fills Utilization, QueueS, MaxIdleS and MaxIdleRatio.
func utilization(ix *index, lim Limits, res *Result) {
	step := int64(SampleEvery)
	var samples, freeSum, run, longest, byRate int
	for t := ix.from; t <= ix.to; t += step {
		if ix.waiting(t) == 0 {
			run = 0
			continue
		}
		samples++
		if lim.NewUsersPerMinute > 0 && lim.NewUsersPerMinute-ix.admittedLastMinute(t) < lim.TotalActiveUsers-ix.active(t) {
			byRate++
		}
		f := ix.free(t, lim)
		freeSum += f
		if f > 0 {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	res.QueueS = seconds(time.Duration(samples) * SampleEvery)
	res.MaxIdleS = seconds(time.Duration(longest) * SampleEvery)
	res.MaxIdleRatio = ratio(res.MaxIdleS, lim.RefreshInterval.Seconds())
	switch {
	case samples == 0:
	case 2*byRate > samples:
		res.BoundBy = BoundByRate
	default:
		res.BoundBy = BoundByConcurrency
	}
	if samples > 0 && lim.TotalActiveUsers > 0 {
		res.Utilization = 1 - float64(freeSum)/float64(samples)/float64(lim.TotalActiveUsers)
	}
}

// fifoInversions counts visitors A with a waiting answer sent at or after
// the admission of a visitor B whose arrival second is later than A's.
// A's arrival second is that of its first answer (the latest usher can have
// bucketed it), B's that of its first sending (the earliest).
func fifoInversions(tl *Timeline, ix *index) int {
	adm := ix.admissions // sorted by admission time, as ix.first
	// latest[i] is the latest arrival second among adm[:i+1].
	latest := make([]int64, len(adm))
	for i, a := range adm {
		latest[i] = a.arrivalSec
		if i > 0 {
			latest[i] = max(latest[i], latest[i-1])
		}
	}
	n := 0
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		if len(v.CheckIns) == 0 || v.Arrival.IsZero() {
			continue
		}
		w := v.CheckIns[0].sent()
		for _, c := range v.CheckIns[1:] {
			if s := c.sent(); s.After(w) {
				w = s
			}
		}
		k := countTo(ix.first, w.UnixNano()) // admissions at or before w
		if k > 0 && latest[k-1] > v.arrivalAck().Unix() {
			n++
		}
	}
	return n
}

// etaErrors collects the announced waits' errors (see Result).
type etaErrors struct {
	abs     []time.Duration
	pct     []float64
	unknown int
	ranges  int // visitors whose first answer announced a range
	inside  int // of those, whose actual wait fell inside it
}

// add counts admitted visitor v if it waited at least two refresh
// intervals from its first waiting answer.
func (e *etaErrors) add(v *Visitor, lim Limits) {
	if len(v.CheckIns) == 0 {
		return
	}
	c := v.CheckIns[0]
	refresh := lim.RefreshInterval
	if refresh <= 0 {
		refresh = c.Refresh
	}
	actual := v.Admitted.Sub(c.At)
	if actual <= 0 || actual < 2*refresh {
		return
	}
	if !c.ETAKnown {
		e.unknown++
		return
	}
	d := c.ETA - actual
	d = max(d, -d)
	e.abs = append(e.abs, d)
	e.pct = append(e.pct, 100*d.Seconds()/actual.Seconds())
	if c.ETAHigh > 0 {
		e.ranges++
		if actual >= c.ETALow && actual <= c.ETAHigh {
			e.inside++
		}
	}
}

// report fills res's ETA fields.
func (e *etaErrors) report(res *Result) {
	res.ETAVisitors, res.ETAUnknown = len(e.abs), e.unknown
	res.ETAErrorMedianS = seconds(percentile(e.abs, 50))
	res.ETAErrorP90S = seconds(percentile(e.abs, 90))
	res.ETAErrorMedianPct = percentileF(e.pct, 50)
	res.ETAErrorP90Pct = percentileF(e.pct, 90)
	if e.ranges > 0 {
		c := float64(e.inside) / float64(e.ranges)
		res.WaitRangeCoverage = &c
	}
}

// percentileF is percentile for float64 values.
func percentileF(xs []float64, p float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(k, 1), len(s))-1]
}

// percentile is the nearest-rank p-th percentile of ds (zero when empty):
// the smallest value with at least p % of the values at or below it.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := int(math.Ceil(p / 100 * float64(len(s))))
	return s[min(max(k, 1), len(s))-1]
}

func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

func seconds(d time.Duration) float64 { return d.Seconds() }
