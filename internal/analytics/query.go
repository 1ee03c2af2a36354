package analytics

import (
	"context"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// Reader reads merged points (usher.Store).
type Reader interface {
	ReadAnalytics(ctx context.Context, room string, step time.Duration, from, to time.Time) ([]usher.AnalyticsPoint, error)
}

// Report is a room's analytics over a time range, as the admin API
// serves it.
type Report struct {
	Room   string  `json:"room"`
	Step   string  `json:"step"`
	Points []Point `json:"points"`
}

// Point is one step of a Report.
type Point struct {
	T           time.Time `json:"t"`
	Arrivals    int64     `json:"arrivals"`
	Admissions  int64     `json:"admissions"`
	Abandoned   int64     `json:"abandoned"`
	Revoked     int64     `json:"revoked"`
	PeakWaiting int64     `json:"peak_waiting"`
	PeakActive  int64     `json:"peak_active"`
	// QueueWait is the time in queue of the step's admissions; Origin the
	// time on the origin of the sessions seen ending in the step.
	QueueWait Quantiles `json:"queue_wait_seconds"`
	Origin    Quantiles `json:"origin_seconds"`
	// ETAError is the error of the announced wait, in percent of the
	// actual wait, of the step's admissions that had one announced.
	ETAError ETAQuantiles `json:"eta_error_pct"`
}

// Quantiles of a duration histogram, in seconds.
type Quantiles struct {
	P50   float64 `json:"p50"`
	P75   float64 `json:"p75"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Count uint64  `json:"count"`
}

// ETAQuantiles of the announced wait's error, in percent.
type ETAQuantiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
}

// StepName names step as the API does: "minute" or "hour".
func StepName(step time.Duration) string {
	if step == time.Hour {
		return "hour"
	}
	return "minute"
}

// ParseStep reads "minute" or "hour".
func ParseStep(s string) (time.Duration, bool) {
	switch s {
	case "minute":
		return time.Minute, true
	case "hour":
		return time.Hour, true
	}
	return 0, false
}

// Query returns room's report of step over [from, to). Abandoned waiters
// of a step are the growth of the store's lapsed-waiter counter since the
// step before (so that step is read too), or, when the step before has
// no sample, since the step's first sample.
func Query(ctx context.Context, rd Reader, room string, step time.Duration, from, to time.Time) (Report, error) {
	rep := Report{Room: room, Step: StepName(step), Points: []Point{}}
	first := from.Add(step - 1).Truncate(step)
	ps, err := rd.ReadAnalytics(ctx, room, step, first.Add(-step), to)
	if err != nil {
		return rep, err
	}
	var prev *usher.AnalyticsPoint
	for i := range ps {
		p := &ps[i]
		if p.Start.Before(first) {
			prev = p
			continue
		}
		rep.Points = append(rep.Points, point(p, prev, step))
		prev = p
	}
	return rep, nil
}

// point turns a stored point into a report's, with prev the stored point
// before it (nil: none).
func point(p, prev *usher.AnalyticsPoint, step time.Duration) Point {
	out := Point{
		T:           p.Start.UTC(),
		Arrivals:    p.Add[fArrivals],
		Admissions:  p.Add[fAdmissions],
		Revoked:     p.Add[fRevoked],
		PeakWaiting: p.Max[fPeakWait],
		PeakActive:  p.Max[fPeakActive],
	}
	if lap, ok := p.Max[fLapsed]; ok {
		before := int64(-1)
		if prev != nil && prev.Start.Equal(p.Start.Add(-step)) {
			if b, ok := prev.Max[fLapsed]; ok {
				before = b
			}
		}
		if n, ok := p.Max[fLapFirst]; ok && before < 0 {
			before = lapBase - n
		}
		if before >= 0 {
			out.Abandoned = lap - before
			if lap < before {
				out.Abandoned = lap // the store's counter started again
			}
		}
	}
	var q, o, e Hist
	for name, n := range p.Add {
		var h *Hist
		switch {
		case strings.HasPrefix(name, pQueue):
			h = &q
		case strings.HasPrefix(name, pOrigin):
			h = &o
		case strings.HasPrefix(name, pETA):
			h = &e
		default:
			continue
		}
		if i, err := strconv.Atoi(name[1:]); err == nil && n > 0 {
			h.AddBucket(i, uint64(n))
		}
	}
	out.QueueWait = seconds(&q)
	out.Origin = seconds(&o)
	out.ETAError = ETAQuantiles{P50: round(e.Quantile(0.5), 1), P90: round(e.Quantile(0.9), 1)}
	return out
}

// seconds returns h's quantiles (h holds milliseconds) in seconds.
func seconds(h *Hist) Quantiles {
	s := func(q float64) float64 { return round(h.Quantile(q)/1000, 3) }
	return Quantiles{P50: s(0.5), P75: s(0.75), P95: s(0.95), P99: s(0.99), Count: h.Count()}
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}
