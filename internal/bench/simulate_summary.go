package bench

import (
	"math"
	"slices"
	"time"
)

// MinuteWaits are the waits of the visitors who arrived in one minute of a
// run.
type MinuteWaits struct {
	// Minute is the arrival minute, from the timeline's start (0: its first
	// 60 s).
	Minute int `json:"minute"`
	// Arrivals counts the visitors who arrived in the minute; Admitted
	// counts those of them who were admitted.
	Arrivals int `json:"arrivals"`
	Admitted int `json:"admitted"`
	// P50, P95 and P99 are percentiles (nearest rank) of the admitted
	// visitors' waits, admission - arrival, in seconds (zero: nobody was
	// admitted).
	P50 float64 `json:"p50_s"`
	P95 float64 `json:"p95_s"`
	P99 float64 `json:"p99_s"`
	// Hist counts the admitted visitors' waits by WaitBuckets: Hist[k]
	// holds the waits below WaitBuckets()[k] and not below the bound
	// before it; the last count holds the waits of 4 hours or more.
	Hist []int `json:"hist"`
}

// WaitBuckets returns the upper bounds of MinuteWaits.Hist's buckets; the
// histogram has one more bucket, for longer waits.
func WaitBuckets() []time.Duration {
	return []time.Duration{
		10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 5 * time.Minute,
		10 * time.Minute, 20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 4 * time.Hour,
	}
}

// QueueSummary is the queue of a run over time: its length, when it
// drained, and how long visitors waited by when they arrived.
type QueueSummary struct {
	// Series samples the timeline every step (see Series).
	Series []Sample `json:"series"`
	// MaxWaiting is the longest queue in Series.
	MaxWaiting int `json:"max_waiting"`
	// Queued reports that at least one visitor waited.
	Queued bool `json:"queued"`
	// Drained reports that nobody waited at the end of the timeline.
	Drained bool `json:"drained"`
	// DrainedS is when the queue drained for good, in seconds from the
	// timeline's start: the moment the last waiter stopped waiting
	// (admitted, abandoned or gone), after which nobody waits. Zero when
	// nobody waited or the queue did not drain.
	DrainedS float64 `json:"drained_s"`
	// Waits are by arrival minute, every minute from the first (0) to the
	// last arrival's, empty minutes included.
	Waits []MinuteWaits `json:"waits"`
}

// SimSummary outlines tl's queue with the definitions of Report, sampling
// its length every step (zero: one second).
func SimSummary(tl *Timeline, lim Limits, step time.Duration) QueueSummary {
	out := QueueSummary{Series: Series(tl, lim, step), Drained: true}
	for _, s := range out.Series {
		out.MaxWaiting = max(out.MaxWaiting, s.Waiting)
	}
	ix := newIndex(tl, lim)
	if n := len(ix.waitEnd); n > 0 {
		out.Queued = true
		last := ix.waitEnd[n-1] // sorted
		if last == math.MaxInt64 || last > ix.to {
			out.Drained = false
		} else {
			out.DrainedS = seconds(time.Duration(last - ix.from))
		}
	}
	out.Waits = minuteWaits(tl, ix.from)
	return out
}

// minuteWaits groups tl's visitors by arrival minute from the unix
// nanosecond from.
func minuteWaits(tl *Timeline, from int64) []MinuteWaits {
	var waits [][]time.Duration
	var out []MinuteWaits
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		if v.Arrival.IsZero() {
			continue
		}
		m := int(max(v.Arrival.UnixNano()-from, 0) / minute)
		for len(out) <= m {
			out = append(out, MinuteWaits{Minute: len(out)})
			waits = append(waits, nil)
		}
		out[m].Arrivals++
		if !v.Admitted.IsZero() {
			out[m].Admitted++
			waits[m] = append(waits[m], v.Admitted.Sub(v.arrivalSent()))
		}
	}
	bounds := WaitBuckets()
	for m := range out {
		w := waits[m]
		out[m].Hist = make([]int, len(bounds)+1)
		for _, d := range w {
			k, _ := slices.BinarySearch(bounds, d+1)
			out[m].Hist[k]++
		}
		out[m].P50 = seconds(percentile(w, 50))
		out[m].P95 = seconds(percentile(w, 95))
		out[m].P99 = seconds(percentile(w, 99))
	}
	return out
}
