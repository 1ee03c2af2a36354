package bench

import (
	"context"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/usherhq/usher/internal/autopilot"
)

// LiveOrigin is OriginModel over real HTTP, for usher bench: Workers
// serve the requests one at a time each, for a Service time drawn per
// request; a request that has waited Timeout for a worker fails with 504
// and takes no worker. Its latency therefore rises with the concurrency
// it is given. It records the latency of every answer (from the request's
// arrival to the answer; a request its client gives up on is not an
// answer) and closes a second of figures each time Second is called.
//
// Every answer carries HeaderOrigin: 1 (a failed one too: the visitor got
// through usher and the origin failed). A LiveOrigin is safe for
// concurrent use.
type LiveOrigin struct {
	m       OriginModel
	workers chan struct{}

	all, sec autopilot.Recorder

	mu          sync.Mutex
	rng         *rand.Rand
	first, last time.Time
	prev        autopilot.Snapshot
	seconds     []OriginSecond
	start       time.Time
}

// NewLiveOrigin returns an origin of model m (which must be valid) whose
// service times are drawn from seed.
func NewLiveOrigin(m OriginModel, seed uint64) *LiveOrigin {
	return &LiveOrigin{m: m, workers: make(chan struct{}, m.Workers), rng: rand.New(rand.NewPCG(seed, 0x0819_0819))}
}

// ServeHTTP answers a request as the model says.
func (o *LiveOrigin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	o.mu.Lock()
	if o.first.IsZero() {
		o.first = arrived
	}
	svc := o.m.Service.Sample(o.rng)
	o.mu.Unlock()
	h := w.Header()
	h.Set(HeaderOrigin, "1")
	h.Set("Cache-Control", "no-store")
	wait := time.NewTimer(o.m.Timeout)
	select {
	case o.workers <- struct{}{}:
		wait.Stop()
	case <-wait.C:
		o.done(arrived, true)
		http.Error(w, "origin busy: no worker within the timeout", http.StatusGatewayTimeout)
		return
	case <-r.Context().Done():
		// The client went away (a run ending): not the origin's answer.
		wait.Stop()
		return
	}
	if err := sleepCtx(r.Context(), svc); err != nil {
		<-o.workers
		return
	}
	<-o.workers
	o.done(arrived, false)
	h.Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"inside":true}` + "\n"))
}

func (o *LiveOrigin) done(arrived time.Time, failed bool) {
	now := time.Now()
	lat := now.Sub(arrived)
	o.all.Record(lat, failed)
	o.sec.Record(lat, failed)
	o.mu.Lock()
	if now.After(o.last) {
		o.last = now
	}
	o.mu.Unlock()
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Second closes the second that ends at now with the room's figures
// (the line, the sessions and the limits in force) and returns it.
func (o *LiveOrigin) Second(now time.Time, waiting int, active int64, rate, conc int) OriginSecond {
	cur := o.sec.Snapshot()
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.start.IsZero() {
		o.start = now.Add(-time.Second)
	}
	d := cur.Sub(&o.prev)
	o.prev = cur
	s := OriginSecond{T: int(now.Sub(o.start).Round(time.Second)/time.Second) - 1, Requests: int(d.Count), Errors: int(d.Errors),
		P99Ms: ms(d.Percentile(99)), Waiting: waiting, Active: active, Rate: rate, Concurrency: conc}
	o.seconds = append(o.seconds, s)
	return s
}

// Stats returns the figures so far, with healthy as the healthy p99
// (HealthyP99Ms). Changes is left to the caller.
func (o *LiveOrigin) Stats(healthy time.Duration) *OriginStats {
	a := o.all.Snapshot()
	o.mu.Lock()
	defer o.mu.Unlock()
	st := &OriginStats{Requests: a.Count, Errors: a.Errors, HealthyP99Ms: ms(healthy),
		P50Ms: ms(a.Percentile(50)), P99Ms: ms(a.Percentile(99)), Seconds: append([]OriginSecond(nil), o.seconds...)}
	if a.Count > 0 {
		st.ErrorRate = float64(a.Errors) / float64(a.Count)
	}
	if span := o.last.Sub(o.first).Seconds(); span > 0 {
		st.ThroughputPerS = float64(a.Count-a.Errors) / span
	}
	return st
}

// Percentile returns the p-th percentile of every answer's latency so
// far (the healthy baseline, measured at low load).
func (o *LiveOrigin) Percentile(p float64) time.Duration {
	s := o.all.Snapshot()
	return s.Percentile(p)
}
