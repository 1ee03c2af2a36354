// Package analytics keeps usher's per-room, per-minute analytics:
// arrivals, admissions (once per visitor), abandoned waiters, revoked
// sessions, peak waiting and active users, and histograms of the time in
// queue, the time on the origin and the error of the announced wait. Each
// node counts what its engine observes (a Recorder is an
// admission.Observer) and samples the store's counters, and flushes its
// per-minute deltas to the store every few seconds, where they merge with
// every other node's (usher.Store.AddAnalytics). Query reads them back as
// points with percentiles. See docs/analytics.md.
package analytics

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

// Field names of a point in the store.
const (
	fArrivals   = "arr"
	fAdmissions = "adm"
	fRevoked    = "rev"
	fEnded      = "end"
	fPeakWait   = "pw"
	fPeakActive = "pa"
	fLapsed     = "lap" // the store's Lapsed counter, the largest seen
	// fLapFirst is lapBase minus the step's first Lapsed sample, so that
	// keeping the largest keeps the smallest sample: the count at the
	// step's start, for a step with no step before it.
	fLapFirst = "lapn"
	pQueue    = "q" // + bucket: time in queue, milliseconds
	pOrigin   = "o" // + bucket: time on origin, milliseconds
	pETA      = "e" // + bucket: announced wait error, percent
	pLearn    = "l" // + bucket: actual wait over the limits' forecast of a cold first page, percent
)

// Sink is where a Recorder flushes (usher.Store).
type Sink interface {
	AddAnalytics(ctx context.Context, room string, deltas []usher.AnalyticsDelta) error
}

// StatsFunc reads a room's live counters (usher.Store.Stats).
type StatsFunc func(ctx context.Context, room string, now time.Time) (usher.RoomStats, error)

// LapsedFunc reads a room's count of lapsed waiters (usher.Store.Lapsed).
type LapsedFunc func(ctx context.Context, room string, now time.Time) (int64, error)

// Options configure a Recorder.
type Options struct {
	// Sink receives the flushed deltas.
	Sink Sink
	// Stats, when not nil, is sampled at each flush for every room Rooms
	// returns: peak waiting and active users.
	Stats StatsFunc
	// Lapsed, when not nil, is sampled likewise: abandoned waiters are the
	// growth of its count.
	Lapsed LapsedFunc
	// Rooms returns the room IDs to sample (nil: none).
	Rooms func() []string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives flush errors (nil: slog.Default()).
	Logger *slog.Logger
	// Metrics, when not nil, is told of every observation too (the
	// Prometheus counters and histograms).
	Metrics admission.Observer
}

// lapBase is what fLapFirst counts down from.
const lapBase = 1 << 62

// MaxPending bounds the minutes of one room a Recorder holds while its
// flushes fail: older minutes are dropped (and logged), so memory stays
// bounded when the store is down.
const MaxPending = 10

// minuteAgg is what a node counted in one minute of one room.
type minuteAgg struct {
	arrivals, admissions, revoked, ended int64
	sampled, lapSampled                  bool
	peakWait, peakActive, lapsed         int64
	lapFirst                             int64 // the first Lapsed sample
	queue, origin, eta, learn            Hist
}

type aggKey struct {
	room   string
	minute int64 // unix second of the minute's start
}

// Recorder counts a node's observations per room and minute and flushes
// them to the store. It is safe for concurrent use; Observe allocates
// nothing once the room's minute exists.
type Recorder struct {
	opts Options
	mu   sync.Mutex
	aggs map[aggKey]*minuteAgg
}

var _ admission.Observer = (*Recorder)(nil)

// NewRecorder returns a Recorder.
func NewRecorder(opts Options) *Recorder {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Recorder{opts: opts, aggs: map[aggKey]*minuteAgg{}}
}

// aggLocked returns the aggregate of room's minute holding at.
func (r *Recorder) aggLocked(room string, at time.Time) *minuteAgg {
	k := aggKey{room, at.Truncate(time.Minute).Unix()}
	a := r.aggs[k]
	if a == nil {
		a = &minuteAgg{}
		r.aggs[k] = a
	}
	return a
}

// Observe implements admission.Observer.
func (r *Recorder) Observe(room string, o admission.Observation) {
	if r.opts.Metrics != nil {
		r.opts.Metrics.Observe(room, o)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.aggLocked(room, o.At)
	switch o.What {
	case admission.Arrived:
		a.arrivals++
	case admission.Admitted:
		a.admissions++
		a.queue.Record(o.Queued.Milliseconds())
		if pct, ok := ETAErrorPct(o.Queued, o.Announced); ok {
			a.eta.Record(pct)
		}
		if pct, ok := LearnPct(o.Queued, o.Forecast); ok {
			a.learn.Record(pct)
		}
	case admission.Ended:
		a.ended++
		if o.OnOrigin > 0 {
			a.origin.Record(o.OnOrigin.Milliseconds())
		}
	case admission.Revoked:
		a.revoked++
	}
}

// ETAErrorPct is the error of an announced wait against the actual one, in
// percent of the actual wait (at least a second): false when no wait was
// announced.
func ETAErrorPct(actual, announced time.Duration) (int64, bool) {
	if announced <= 0 {
		return 0, false
	}
	diff := actual - announced
	if diff < 0 {
		diff = -diff
	}
	return int64(100 * diff.Seconds() / max(actual, time.Second).Seconds()), true
}

// Sample reads every room's counters once and keeps the largest seen this
// minute.
func (r *Recorder) Sample(ctx context.Context) {
	if r.opts.Rooms == nil {
		return
	}
	now := r.opts.Now()
	for _, room := range r.opts.Rooms() {
		if r.opts.Stats != nil {
			if st, err := r.opts.Stats(ctx, room, now); err == nil {
				r.mu.Lock()
				a := r.aggLocked(room, now)
				a.peakWait = max(a.peakWait, st.Waiting)
				a.peakActive = max(a.peakActive, st.Active)
				a.sampled = true
				r.mu.Unlock()
			}
		}
		if r.opts.Lapsed != nil {
			if n, err := r.opts.Lapsed(ctx, room, now); err == nil {
				r.mu.Lock()
				a := r.aggLocked(room, now)
				if !a.lapSampled {
					a.lapFirst = n
				}
				a.lapsed = max(a.lapsed, n)
				a.lapSampled = true
				r.mu.Unlock()
			}
		}
	}
}

// Flush sends what was counted since the last flush to the sink, one call
// per room. What a failed call held is kept for the next flush (at most
// MaxPending minutes a room).
func (r *Recorder) Flush(ctx context.Context) error {
	r.mu.Lock()
	aggs := r.aggs
	r.aggs = make(map[aggKey]*minuteAgg, len(aggs))
	r.mu.Unlock()
	byRoom := map[string][]usher.AnalyticsDelta{}
	keys := map[string][]aggKey{}
	for k, a := range aggs {
		byRoom[k.room] = append(byRoom[k.room], a.delta(time.Unix(k.minute, 0).UTC()))
		keys[k.room] = append(keys[k.room], k)
	}
	var first error
	for room, deltas := range byRoom {
		err := r.opts.Sink.AddAnalytics(ctx, room, deltas)
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		r.opts.Logger.Warn("analytics not flushed; kept for the next flush", "room", room, "err", err)
		if usher.ErrorCode(err) == usher.EInvalid {
			continue // would never go
		}
		r.mu.Lock()
		for _, k := range keys[room] {
			r.aggLocked(k.room, time.Unix(k.minute, 0)).merge(aggs[k])
		}
		r.trimLocked(room)
		r.mu.Unlock()
	}
	return first
}

// trimLocked drops room's oldest minutes beyond MaxPending.
func (r *Recorder) trimLocked(room string) {
	var ks []aggKey
	for k := range r.aggs {
		if k.room == room {
			ks = append(ks, k)
		}
	}
	for len(ks) > MaxPending {
		oldest := 0
		for i := range ks {
			if ks[i].minute < ks[oldest].minute {
				oldest = i
			}
		}
		r.opts.Logger.Warn("analytics dropped: the store took no flush for too long", "room", room, "minute", time.Unix(ks[oldest].minute, 0).UTC())
		delete(r.aggs, ks[oldest])
		ks = append(ks[:oldest], ks[oldest+1:]...)
	}
}

// Run samples and flushes every interval until ctx ends, then flushes once
// more.
func (r *Recorder) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = r.Flush(fctx)
			cancel()
			return
		case <-t.C:
			r.Sample(ctx)
			_ = r.Flush(ctx)
		}
	}
}

func (a *minuteAgg) merge(o *minuteAgg) {
	a.arrivals += o.arrivals
	a.admissions += o.admissions
	a.revoked += o.revoked
	a.ended += o.ended
	if o.sampled {
		a.sampled = true
		a.peakWait = max(a.peakWait, o.peakWait)
		a.peakActive = max(a.peakActive, o.peakActive)
	}
	if o.lapSampled {
		if !a.lapSampled || o.lapFirst < a.lapFirst {
			a.lapFirst = o.lapFirst
		}
		a.lapSampled = true
		a.lapsed = max(a.lapsed, o.lapsed)
	}
	a.queue.Merge(&o.queue)
	a.origin.Merge(&o.origin)
	a.eta.Merge(&o.eta)
	a.learn.Merge(&o.learn)
}

// delta returns a's fields as a store delta of minute.
func (a *minuteAgg) delta(minute time.Time) usher.AnalyticsDelta {
	d := usher.AnalyticsDelta{Minute: minute, Add: map[string]int64{}, Max: map[string]int64{}}
	for name, v := range map[string]int64{fArrivals: a.arrivals, fAdmissions: a.admissions, fRevoked: a.revoked, fEnded: a.ended} {
		if v != 0 {
			d.Add[name] = v
		}
	}
	if a.sampled {
		d.Max[fPeakWait], d.Max[fPeakActive] = a.peakWait, a.peakActive
	}
	if a.lapSampled {
		d.Max[fLapsed] = a.lapsed
		d.Max[fLapFirst] = lapBase - min(max(a.lapFirst, 0), lapBase)
	}
	for prefix, h := range map[string]*Hist{pQueue: &a.queue, pOrigin: &a.origin, pETA: &a.eta, pLearn: &a.learn} {
		h.Each(func(i int, n uint64) { d.Add[prefix+strconv.Itoa(i)] = int64(n) })
	}
	return d
}
