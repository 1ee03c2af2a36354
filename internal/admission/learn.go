package admission

import (
	"math"
	"sync"
	"time"
)

// What a room learns from its earlier lines (docs/admission.md, "Learning
// from a room's earlier events"). The forecast from the limits cannot know
// how long visitors browse or how many give up before anyone has been
// served; a line's first pages rest on it alone (the serving counter has
// no span yet), and in a crowd whose visitors browse for minutes they are
// off by a third. Each waiter whose first page was such a cold one tells,
// at its admission, the ratio of its actual wait to what the limits alone
// forecast for it (Observation.Forecast). The analytics keep those ratios
// per room (internal/analytics), and the median over the room's history
// is its prior: the factor the next line's cold first pages scale the
// forecast by, clamped to [MinPrior, MaxPrior]. The factor is read when a
// line forms and kept while it stands, so that every cold first page of
// one event used the same one (and the ratios it teaches stay comparable).

// MinPrior and MaxPrior clamp a learned factor: history may say the limits
// overstate or understate the wait, but not by more than this.
const (
	MinPrior = 0.5
	MaxPrior = 3.0
)

// ClampPrior returns f within [MinPrior, MaxPrior], and false for a factor
// that is no measure (not a positive finite number).
func ClampPrior(f float64) (float64, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return 1, false
	}
	return min(max(f, MinPrior), MaxPrior), true
}

// lines is what an engine knows of each room's standing line for the
// learned estimate: when it last saw a waiter, the factor frozen when the
// line formed, and the latest arrival whose first page was cold. One
// entry per room of the config: nothing a visitor sends makes it grow.
type lines struct {
	mu    sync.Mutex
	rooms map[string]*lineState
}

type lineState struct {
	last      time.Time // the latest waiting decision
	factor    float64   // the prior in force since the line formed
	coldUntil time.Time // the latest arrival whose first page was cold
}

// factor returns the factor of room's line at now, freezing the prior
// when no waiting decision has been seen for gap (a new line). It
// records now as a waiting decision.
func (l *lines) factor(room string, now time.Time, gap time.Duration, prior func(string) (float64, bool)) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rooms == nil {
		l.rooms = map[string]*lineState{}
	}
	ln := l.rooms[room]
	if ln == nil {
		ln = &lineState{}
		l.rooms[room] = ln
	}
	if ln.last.IsZero() || now.Sub(ln.last) > gap {
		ln.factor = 1
		if prior != nil {
			if f, ok := prior(room); ok {
				ln.factor, _ = ClampPrior(f)
			}
		}
	}
	if now.After(ln.last) {
		ln.last = now
	}
	return ln.factor
}

// cold records that a waiter of room who arrived at arrived was shown a
// cold first page.
func (l *lines) cold(room string, arrived time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ln := l.rooms[room]; ln != nil && arrived.After(ln.coldUntil) {
		ln.coldUntil = arrived
	}
}

// coldFactor returns the factor a waiter of room who arrived at arrived
// had its first page scaled by, and whether that page was cold: it
// arrived no later than the latest arrival shown one.
func (l *lines) coldFactor(room string, arrived time.Time) (float64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln := l.rooms[room]
	if ln == nil || ln.coldUntil.IsZero() || arrived.After(ln.coldUntil) {
		return 0, false
	}
	return ln.factor, true
}

// forecastOf returns what the limits alone forecast for a waiter whose
// first page announced announced with factor f in force.
func forecastOf(announced time.Duration, f float64) time.Duration {
	if f <= 0 {
		return 0
	}
	return time.Duration(float64(announced) / f)
}
