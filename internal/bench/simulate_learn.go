package bench

import (
	"sync"

	engine "github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/analytics"
)

// LearnedStats is what a simulated event teaches the room's next one
// (docs/admission.md, "Learning from a room's earlier events"), as a live
// room's analytics would record it.
type LearnedStats struct {
	// Prior is the factor the run's cold first pages were scaled by (1:
	// none given).
	Prior float64 `json:"prior"`
	// Waiters is how many admitted waiters had a cold first page: the
	// ratios the next prior is taken from.
	Waiters uint64 `json:"waiters"`
	// Factor is the prior the next event would use (the median ratio of
	// actual wait to the limits' forecast, clamped); OK is false when
	// Waiters is below analytics.MinLearned, and the next event has none.
	Factor float64 `json:"factor"`
	OK     bool    `json:"ok"`
}

// simLearn records, as analytics.Recorder does, each admitted waiter's
// actual wait over the limits' forecast for its cold first page.
type simLearn struct {
	mu sync.Mutex
	h  analytics.Hist
}

// Observe implements engine.Observer.
func (l *simLearn) Observe(_ string, o engine.Observation) {
	if o.What != engine.Admitted {
		return
	}
	if pct, ok := analytics.LearnPct(o.Queued, o.Forecast); ok {
		l.mu.Lock()
		l.h.Record(pct)
		l.mu.Unlock()
	}
}

func (l *simLearn) stats(prior float64) *LearnedStats {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &LearnedStats{Prior: 1, Waiters: l.h.Count()}
	if prior > 0 {
		st.Prior, _ = engine.ClampPrior(prior)
	}
	st.Factor, st.OK = analytics.PriorOf(&l.h)
	return st
}
