package bench

import (
	"container/heap"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
)

// OriginModel is a simulated origin whose latency and error rate grow with
// the load it carries: Workers serve the requests one at a time each, in
// order of arrival, each for a Service time; a request that has waited
// Timeout for a worker fails (the visitor sees a timeout) and takes no
// worker. Below its capacity (Workers / mean Service requests a second)
// a request's latency is its service time; above it the line for the
// workers grows until requests time out.
type OriginModel struct {
	Workers int
	Service Dist
	Timeout time.Duration
}

// On reports whether the model is set.
func (m *OriginModel) On() bool { return m.Workers > 0 }

// Validate reports a model that cannot run.
func (m *OriginModel) Validate() error {
	if !m.On() {
		return nil
	}
	if m.Service.Mean() <= 0 {
		return fmt.Errorf("origin model: service time %v must be above zero", m.Service)
	}
	if m.Timeout <= 0 {
		return fmt.Errorf("origin model: timeout %v must be above zero", m.Timeout)
	}
	return nil
}

// Capacity is the requests a second the origin can serve.
func (m *OriginModel) Capacity() float64 {
	return float64(m.Workers) / m.Service.Mean().Seconds()
}

// HealthyP99 is the origin's p99 latency without load: the 99th
// percentile of its service time (estimated from 100,000 draws).
func (m *OriginModel) HealthyP99(seed uint64) time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x0819))
	var s autopilot.Snapshot
	var r autopilot.Recorder
	for range 100000 {
		r.Record(m.Service.Sample(rng), false)
	}
	s = r.Snapshot()
	return s.Percentile(99)
}

// OriginSecond is one second of the simulated origin and room.
type OriginSecond struct {
	// T is the second's start since the run's start, in seconds.
	T int `json:"t"`
	// Requests answered in the second (failed ones included), Errors
	// the failed ones (timeouts).
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// P99Ms is the second's p99 latency, in milliseconds.
	P99Ms float64 `json:"p99_ms"`
	// Waiting is the line at the second's end; Active the sessions.
	Waiting int   `json:"waiting"`
	Active  int64 `json:"active"`
	// Rate and Concurrency are the effective limits in force.
	Rate        int `json:"rate"`
	Concurrency int `json:"concurrency"`
}

// OriginStats are a whole run's origin figures.
type OriginStats struct {
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// ErrorRate is Errors / Requests.
	ErrorRate float64 `json:"error_rate"`
	// P50Ms and P99Ms are the latency percentiles over every request.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// HealthyP99Ms is the origin's p99 without load (HealthyP99).
	HealthyP99Ms float64 `json:"healthy_p99_ms"`
	// ThroughputPerS is the successful requests a second while the
	// origin was busy (from its first request to its last).
	ThroughputPerS float64 `json:"throughput_per_s"`
	// Changes counts the autopilot's changes of the limits.
	Changes int `json:"autopilot_changes"`
	// Seconds is the run, second by second.
	Seconds []OriginSecond `json:"seconds,omitempty"`
}

// workerHeap holds the times the workers are next free.
type workerHeap []time.Duration

func (h workerHeap) Len() int           { return len(h) }
func (h workerHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h workerHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *workerHeap) Push(x any)        { *h = append(*h, x.(time.Duration)) }
func (h *workerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// simOrigin is the origin model in a run, with the room's autopilot (nil
// when the room has none) ticking on the simulated clock.
type simOrigin struct {
	m     OriginModel
	rng   *rand.Rand
	free  workerHeap
	all   autopilot.Recorder // the whole run
	sec   autopilot.Recorder // this second
	prev  autopilot.Snapshot
	gov   *autopilot.Recorder // the autopilot's
	pilot *autopilot.Pilot
	next  time.Duration // the next tick
	first time.Duration
	last  time.Duration
	stats OriginStats
}

func newSimOrigin(m OriginModel, seed uint64, room *usher.Room, start time.Time) *simOrigin {
	o := &simOrigin{m: m, rng: rand.New(rand.NewPCG(seed, 0x0819_0819)), first: -1}
	o.free = make(workerHeap, m.Workers)
	if autopilot.Governed(room) {
		o.pilot = &autopilot.Pilot{Logger: slog.New(slog.DiscardHandler),
			OnChange: func(string, autopilot.Change) { o.stats.Changes++ }}
		o.pilot.SetRooms([]*usher.Room{room}, start)
		o.gov = o.pilot.Recorder(room.ID)
	}
	o.next = time.Second
	return o
}

// serve answers a request that reaches the origin at now.
func (o *simOrigin) serve(now time.Duration) {
	if o.first < 0 {
		o.first = now
	}
	o.last = now
	start := max(now, o.free[0])
	var lat time.Duration
	failed := false
	if start-now > o.m.Timeout {
		lat, failed = o.m.Timeout, true
	} else {
		svc := o.m.Service.Sample(o.rng)
		lat = start - now + svc
		o.free[0] = start + svc
		heap.Fix(&o.free, 0)
	}
	o.all.Record(lat, failed)
	o.sec.Record(lat, failed)
	if o.gov != nil {
		o.gov.Record(lat, failed)
	}
}

// tick closes the seconds up to now: the autopilot's sample and the
// run's second-by-second record.
func (o *simOrigin) tick(ctx context.Context, s *sim, now time.Duration) {
	for o.next <= now {
		at := s.at(o.next)
		if o.pilot != nil {
			o.pilot.Tick(ctx, at)
		}
		cur := o.sec.Snapshot()
		d := cur.Sub(&o.prev)
		o.prev = cur
		sched := s.room.At(at)
		set := sched.Settings
		if o.pilot != nil && set.Autopilot.Enabled {
			o.pilot.Limit(s.room.ID, &set)
		}
		st, _ := s.eng.Status(ctx, &s.room, at)
		o.stats.Seconds = append(o.stats.Seconds, OriginSecond{
			T: int((o.next - time.Second) / time.Second), Requests: int(d.Count), Errors: int(d.Errors),
			P99Ms: ms(d.Percentile(99)), Waiting: int(s.tally.waiting.Load()), Active: st.Active,
			Rate: set.NewUsersPerMinute, Concurrency: set.TotalActiveUsers,
		})
		o.next += time.Second
	}
}

// finish returns the run's origin figures.
func (o *simOrigin) finish(seed uint64) *OriginStats {
	a := o.all.Snapshot()
	st := o.stats
	st.Requests, st.Errors = a.Count, a.Errors
	if a.Count > 0 {
		st.ErrorRate = float64(a.Errors) / float64(a.Count)
	}
	st.P50Ms, st.P99Ms = ms(a.Percentile(50)), ms(a.Percentile(99))
	st.HealthyP99Ms = ms(o.m.HealthyP99(seed))
	if span := (o.last - o.first).Seconds(); span > 0 {
		st.ThroughputPerS = float64(a.Count-a.Errors) / span
	}
	return &st
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
