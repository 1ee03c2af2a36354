// Package autopilot is usher's origin-health governor: pure logic over
// per-second health samples of a room's origin (latency percentile, error
// rate) on the samples' own clock. It learns a latency baseline, detects
// degradation (a threshold over the baseline, or an absolute latency or
// error target), lowers the room's effective admission rate (and, if asked,
// its active-user limit) multiplicatively, and recovers gradually, within
// the [floor, ceiling] the operator sets, with hysteresis and a cap on the
// changes per minute. See docs/autopilot.md.
package autopilot

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// Defaults of usher.Autopilot's zero fields.
const (
	DefaultPercentile          = 99
	DefaultSigma               = 3.0
	DefaultFactor              = 1.3
	DefaultErrorTarget         = 0.01
	DefaultBaselineSamples     = 20
	DefaultDecrease            = 0.5
	DefaultRecover             = 0.25
	DefaultMaxChangesPerMinute = 6
	DefaultProbeInterval       = time.Second
	DefaultProbeTimeout        = 2 * time.Second
)

// The governor's timing. A decrease needs DegradedSeconds degraded samples
// in a row (one bad second is noise), an increase HealthySeconds healthy
// ones (and a line waiting: without demand there is nothing to learn).
const (
	DegradedSeconds = 2
	HealthySeconds  = 5
	// minErrorSample is the fewest responses in a second whose error
	// share counts.
	minErrorSample = 10
)

// Reasons of a change.
const (
	ReasonLatency       = "latency"        // over the baseline's threshold
	ReasonLatencyTarget = "latency_target" // over the absolute latency target
	ReasonErrors        = "errors"         // error share over the target
	ReasonRecovered     = "recovered"      // healthy, with a line waiting
)

// Range is a closed interval of a limit.
type Range struct{ Min, Max int }

// Clamp returns v within r.
func (r Range) Clamp(v int) int { return max(r.Min, min(v, r.Max)) }

// Bounds returns the ranges the effective rate and active-user limit of
// settings s may take: [floor, ceiling], the floor a tenth of the
// configured limit (at least 1) unless set, the ceiling the configured
// limit unless set (so the configured limit is exceeded only by a ceiling
// the operator wrote). A floor above its ceiling is lowered to it.
func Bounds(s *usher.Settings) (rate, conc Range) {
	a := &s.Autopilot
	rate = bound(s.NewUsersPerMinute, a.MinNewUsersPerMinute, a.MaxNewUsersPerMinute)
	conc = bound(s.TotalActiveUsers, a.MinTotalActiveUsers, a.MaxTotalActiveUsers)
	return rate, conc
}

func bound(configured, lo, hi int) Range {
	if hi <= 0 {
		hi = configured
	}
	if lo <= 0 {
		lo = max(configured/10, 1)
	}
	hi = max(hi, 1)
	return Range{Min: min(lo, hi), Max: hi}
}

// Params are a governor's settings with the defaults filled in.
type Params struct {
	Percentile          int
	Sigma, Factor       float64
	LatencyTarget       time.Duration
	ErrorTarget         float64
	BaselineSamples     int
	Decrease, Recover   float64
	MaxChangesPerMinute int
	Concurrency         bool
}

// ParamsOf returns a's parameters, defaults filled in for zero fields.
func ParamsOf(a *usher.Autopilot) Params {
	p := Params{
		Percentile: a.Percentile, Sigma: a.Sigma, Factor: a.Factor, LatencyTarget: a.LatencyTarget,
		ErrorTarget: a.ErrorTarget, BaselineSamples: a.BaselineSamples, Decrease: a.Decrease,
		Recover: a.Recover, MaxChangesPerMinute: a.MaxChangesPerMinute, Concurrency: a.Concurrency,
	}
	orDefault(&p.Percentile, DefaultPercentile)
	orDefault(&p.Sigma, DefaultSigma)
	orDefault(&p.Factor, DefaultFactor)
	orDefault(&p.ErrorTarget, DefaultErrorTarget)
	orDefault(&p.BaselineSamples, DefaultBaselineSamples)
	orDefault(&p.Decrease, DefaultDecrease)
	orDefault(&p.Recover, DefaultRecover)
	orDefault(&p.MaxChangesPerMinute, DefaultMaxChangesPerMinute)
	return p
}

func orDefault[T int | float64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// Sample is one second of the origin's health, and of the room's use of
// its limits.
type Sample struct {
	// At is the second's start.
	At time.Time
	// Count is the responses (or probes) in the second; Errors those that
	// were 5xx or timed out.
	Count, Errors int64
	// Latency is the watched percentile of the second's latencies.
	Latency time.Duration
	// Waiting reports that visitors wait in line: only then does the
	// governor raise the figures (there is demand to learn from).
	Waiting bool
	// Active and AdmittedLastMinute are the room's figures in use: a
	// decrease starts from them when they are below the limits, so that a
	// cut bites at once.
	Active, AdmittedLastMinute int64
}

// Change is one decision of the governor.
type Change struct {
	At                 time.Time
	Direction          string // "down" or "up"
	Reason             string // one of the Reason constants
	FromRate, ToRate   int
	FromConc, ToConc   int
	Latency, Threshold time.Duration
	ErrorRate          float64
}

// State is what the governor knows, for the status JSON.
type State struct {
	// Rate and Concurrency are the effective figures (Concurrency zero:
	// not governed).
	Rate, Concurrency int
	// Learning is true until the baseline is learned.
	Learning bool
	// Baseline and Threshold are the learned latency (the median of the
	// baseline samples) and the latency above which the origin counts as
	// degraded.
	Baseline, Threshold time.Duration
	// Degraded reports that the last sample was degraded.
	Degraded bool
	// Latency and ErrorRate are the last sample's.
	Latency   time.Duration
	ErrorRate float64
	// Changes counts the decisions; Last is the latest (zero: none).
	Changes int64
	Last    Change
}

// Governor governs one room. Limits is safe to call from any goroutine
// and costs two atomic loads; Observe, Configure and State serialise on a
// mutex.
type Governor struct {
	rate, conc atomic.Int64
	governConc atomic.Bool

	mu     sync.Mutex
	p      Params
	rr, cr Range
	// baseline learning: the samples' latencies until BaselineSamples are
	// in, then their median (mean) and scaled median absolute deviation
	// (spread), robust to the odd slow second of a busy machine
	n            int
	learned      []float64 // seconds
	mean, spread float64   // seconds
	bad, good    int       // degraded and healthy samples in a row
	lastBad      int       // rate at the last decrease (0: none)
	lastBadC     int
	// stepF is the share a step up adds (MaxStep to FastStep): FastStep
	// until the first sign of degradation, MaxStep after each, doubled
	// by each step up that no sign followed.
	stepF float64
	// probe is the figures before the last step up while it is larger
	// than MaxStep and no other change followed: two degraded samples
	// within ProbeSeconds of it undo it.
	probe          bool
	probeAt        time.Time
	probeR, probeC int
	// lastDeg is the last degraded sample's time: a second one within
	// ProbeSeconds is a sign of degradation.
	lastDeg time.Time
	// rStart and cStart are the figures a new governor starts from.
	rStart, cStart int
	changes        []time.Time // increases within the last minute
	downs          []time.Time // decreases within the last minute
	state          State
	configured     bool
	primed         bool
}

// New returns a governor for settings s. Its figures start at the
// configured limits when the operator wrote a ceiling above them (the
// guess is deemed safe; autopilot looks for more), else at the floor (the
// guess may be too high); at the first sample they rise to what the room
// has in use, if more (clamped to the bounds): a governor that starts
// while the room runs takes over its pace, and one that starts before a
// flash crowd lets it in from the start figures up, in steps, rather
// than all at once. See Observe.
func New(s *usher.Settings) *Governor {
	g := &Governor{}
	g.Configure(s)
	return g
}

// Configure applies settings s (a reload, an event starting): the bounds
// and parameters change; the figures are clamped into the new bounds (the
// configured limits when the governor is new). The learned baseline is
// kept.
func (g *Governor) Configure(s *usher.Settings) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p = ParamsOf(&s.Autopilot)
	g.rr, g.cr = Bounds(s)
	g.governConc.Store(g.p.Concurrency)
	if !g.configured {
		// From the start figures until the first sample says what is in
		// use (see Observe).
		g.configured = true
		g.stepF = FastStep
		g.rStart, g.cStart = startOf(s.NewUsersPerMinute, g.rr), startOf(s.TotalActiveUsers, g.cr)
		g.rate.Store(int64(g.rStart))
		g.conc.Store(int64(g.cStart))
	} else {
		g.rate.Store(int64(g.rr.Clamp(int(g.rate.Load()))))
		g.conc.Store(int64(g.cr.Clamp(int(g.conc.Load()))))
	}
}

// Limits returns the effective admission rate and active-user limit
// (concurrency zero: not governed).
func (g *Governor) Limits() (rate, conc int) {
	r, c := int(g.rate.Load()), int(g.conc.Load())
	if !g.governConc.Load() {
		c = 0
	}
	return r, c
}

// Adopt sets the figures to a room-wide decision taken elsewhere (another
// node's), clamped to the bounds. It counts as no change of this governor.
func (g *Governor) Adopt(rate, conc int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rate > 0 {
		g.rate.Store(int64(g.rr.Clamp(rate)))
	}
	if conc > 0 {
		g.conc.Store(int64(g.cr.Clamp(conc)))
	}
}

// AdoptChange sets the figures to a change another node made at at: as
// Adopt, and the change counts toward this governor's cap and spacing, and
// ends its streaks, so that the nodes of a room change it as one.
func (g *Governor) AdoptChange(rate, conc int, at time.Time) {
	g.mu.Lock()
	beforeR, beforeC := int(g.rate.Load()), int(g.conc.Load())
	g.mu.Unlock()
	g.Adopt(rate, conc)
	g.mu.Lock()
	defer g.mu.Unlock()
	if rate < beforeR {
		g.downs = append(g.downs, at)
		// As after a decrease of its own: careful steps, no open step.
		g.stepF, g.probe = MaxStep, false
	} else {
		g.changes = append(g.changes, at)
		// As after a step of its own: open to be undone if it was fast,
		// and the next one larger.
		g.probe, g.probeAt, g.probeR, g.probeC = g.stepF > MaxStep, at, beforeR, beforeC
		g.stepF = min(2*g.stepF, FastStep)
	}
	g.bad, g.good = 0, 0
}

// State returns what the governor knows.
func (g *Governor) State() State {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := g.state
	st.Rate, st.Concurrency = g.Limits()
	st.Learning = g.n < g.p.BaselineSamples
	if !st.Learning {
		st.Baseline = seconds(g.mean)
		st.Threshold = g.threshold()
	}
	return st
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// threshold is the latency above which the origin is degraded by its
// baseline: the mean plus Sigma deviations, and at least Factor times the
// mean.
func (g *Governor) threshold() time.Duration {
	return seconds(max(g.mean+g.p.Sigma*g.spread, g.mean*g.p.Factor))
}

// Observe takes one second's sample and returns the change it makes, if
// any. Samples must come in time order.
func (g *Governor) Observe(s Sample) (Change, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	errRate := 0.0
	if s.Count > 0 {
		errRate = float64(s.Errors) / float64(s.Count)
	}
	g.state.Latency, g.state.ErrorRate = s.Latency, errRate
	if !g.primed {
		g.primed = true
		g.rate.Store(int64(g.rr.Clamp(max(int(s.AdmittedLastMinute), g.rStart))))
		g.conc.Store(int64(g.cr.Clamp(max(int(s.Active), g.cStart))))
	}
	if s.Count == 0 {
		// No traffic: nothing to learn, nothing to judge; a streak ends.
		g.bad, g.good = 0, 0
		g.state.Degraded = false
		return Change{}, false
	}
	learning := g.n < g.p.BaselineSamples
	var reason string
	var threshold time.Duration
	switch {
	case s.Count >= minErrorSample && errRate > g.p.ErrorTarget:
		reason = ReasonErrors
	case g.p.LatencyTarget > 0 && s.Latency > g.p.LatencyTarget:
		reason, threshold = ReasonLatencyTarget, g.p.LatencyTarget
	case !learning && s.Latency > g.threshold():
		reason, threshold = ReasonLatency, g.threshold()
	}
	if learning {
		if reason == "" {
			g.learn(s.Latency)
		}
	}
	healthy := reason == "" && (learning || s.Latency <= g.healthyBelow())
	g.state.Degraded = reason != ""
	if g.probe && s.At.Sub(g.probeAt) > ProbeSeconds*time.Second {
		g.probe = false
	}
	if reason != "" && !learning {
		// A sign of degradation: a second degraded sample within
		// ProbeSeconds (not necessarily the next second: one slow second
		// alone may be the machine's). The next steps up are careful
		// ones, and a fast step it follows is undone at once.
		prev := g.lastDeg
		sign := !prev.IsZero() && s.At.Sub(prev) <= ProbeSeconds*time.Second
		g.lastDeg = s.At
		if sign {
			g.stepF = MaxStep
		}
		// Both degraded samples after the step: it is the step's doing.
		if sign && g.probe && !prev.Before(g.probeAt) {
			g.probe = false
			if c, ok := g.undo(s, reason); ok {
				c.Latency, c.Threshold, c.ErrorRate = s.Latency, threshold, errRate
				g.bad, g.good = 0, 0
				return g.record(c), true
			}
		}
	}
	switch {
	case reason != "":
		g.bad++
		g.good = 0
	case healthy:
		g.good++
		g.bad = 0
	default: // within the hysteresis band: hold (the healthy seconds
		// so far count on; a band second is not one of them)
		g.bad = 0
	}
	if g.bad >= DegradedSeconds && g.allowed(s.At, true) {
		if c, ok := g.decrease(s, reason); ok {
			c.Latency, c.Threshold, c.ErrorRate = s.Latency, threshold, errRate
			g.bad = 0
			return g.record(c), true
		}
	}
	if healthy && g.good >= HealthySeconds && s.Waiting && !learning && g.allowed(s.At, false) {
		if c, ok := g.increase(s); ok {
			c.Latency, c.ErrorRate = s.Latency, errRate
			g.good = 0
			return g.record(c), true
		}
	}
	return Change{}, false
}

// healthyBelow is the latency under which a sample is healthy: halfway
// between the baseline and the threshold (the band between is hysteresis),
// and under a latency target.
func (g *Governor) healthyBelow() time.Duration {
	h := (seconds(g.mean) + g.threshold()) / 2
	if t := g.p.LatencyTarget; t > 0 {
		h = min(h, t*3/4)
	}
	return h
}

func (g *Governor) learn(l time.Duration) {
	g.learned = append(g.learned, l.Seconds())
	g.n++
	if g.n < g.p.BaselineSamples {
		return
	}
	g.mean = median(g.learned)
	dev := make([]float64, len(g.learned))
	for i, x := range g.learned {
		dev[i] = math.Abs(x - g.mean)
	}
	// 1.4826 x the MAD estimates the standard deviation of a normal
	// distribution, so that Sigma keeps its usual meaning.
	g.spread = 1.4826 * median(dev)
	g.learned = nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// allowed reports whether a change at now (down: a decrease) stays
// within the caps: at most max_changes_per_minute increases and as many
// decreases in any minute, each at least a minute / cap after the last
// change of its kind, so that a change's effect is seen before the next.
// A decrease is never held back by increases: a degrading origin comes
// first.
func (g *Governor) allowed(now time.Time, down bool) bool {
	list := &g.changes
	if down {
		list = &g.downs
	}
	keep := (*list)[:0]
	for _, t := range *list {
		if now.Sub(t) < time.Minute {
			keep = append(keep, t)
		}
	}
	*list = keep
	if len(keep) >= g.p.MaxChangesPerMinute {
		return false
	}
	if n := len(keep); n > 0 && now.Sub(keep[n-1]) < time.Minute/time.Duration(g.p.MaxChangesPerMinute) {
		return false
	}
	if !down {
		// An increase also waits its spacing after a decrease.
		if n := len(g.downs); n > 0 && now.Sub(g.downs[n-1]) < time.Minute/time.Duration(g.p.MaxChangesPerMinute) {
			return false
		}
	}
	return true
}

func (g *Governor) record(c Change) Change {
	if c.Direction == "down" {
		g.downs = append(g.downs, c.At)
	} else {
		g.changes = append(g.changes, c.At)
	}
	g.state.Changes++
	g.state.Last = c
	return c
}

func (g *Governor) decrease(s Sample, reason string) (Change, bool) {
	rate, conc := int(g.rate.Load()), int(g.conc.Load())
	// A cut of the concurrency bites only as the sessions in use end:
	// while they are still above it, another cut would only undershoot
	// later. (A cut of the rate bites at once: it is the inflow.)
	if g.p.Concurrency && int(s.Active) > conc {
		return Change{}, false
	}
	c := Change{At: s.At, Direction: "down", Reason: reason, FromRate: rate, FromConc: conc, ToRate: rate, ToConc: conc}
	from := rate
	if u := int(s.AdmittedLastMinute); u > 0 && u < from {
		from = u
	}
	c.ToRate = g.rr.Clamp(int(float64(from) * g.p.Decrease))
	if g.p.Concurrency {
		fromC := conc
		if u := int(s.Active); u > 0 && u < fromC {
			fromC = u
		}
		c.ToConc = g.cr.Clamp(int(float64(fromC) * g.p.Decrease))
	}
	if c.ToRate == rate && c.ToConc == conc {
		return Change{}, false // at the floor already
	}
	g.lastBad, g.lastBadC = rate, conc
	if c.FromRate > from {
		g.lastBad = from
	}
	g.stepF, g.probe = MaxStep, false
	g.rate.Store(int64(c.ToRate))
	g.conc.Store(int64(c.ToConc))
	return c, true
}

func (g *Governor) increase(s Sample) (Change, bool) {
	rate, conc := int(g.rate.Load()), int(g.conc.Load())
	f := g.stepF
	c := Change{At: s.At, Direction: "up", Reason: ReasonRecovered, FromRate: rate, FromConc: conc}
	// A figure is raised to at most a step above what is in use. The
	// rate, though, also rises when the room reaches its concurrency (the
	// line waits for sessions to end, so the admissions stay below the
	// rate): otherwise the two would rise in turns, one a step.
	rateUse, concUse := int64(s.AdmittedLastMinute), int64(s.Active)
	if g.p.Concurrency && reaches(concUse, conc) {
		rateUse = max(rateUse, int64(rate))
	}
	c.ToRate = g.rr.Clamp(max(rate, min(g.step(rate, g.lastBad, g.rr.Max, f), inUseCap(rateUse, f))))
	c.ToConc = conc
	if g.p.Concurrency {
		c.ToConc = g.cr.Clamp(max(conc, min(g.step(conc, g.lastBadC, g.cr.Max, f), inUseCap(concUse, f))))
	}
	if c.ToRate == rate && c.ToConc == conc {
		return Change{}, false // at the ceiling
	}
	// A fast step stays open until the next change: two degraded samples
	// within ProbeSeconds undo it.
	g.probe, g.probeAt, g.probeR, g.probeC = f > MaxStep, s.At, rate, conc
	// No sign since the last step: the next may be larger.
	g.stepF = min(2*f, FastStep)
	g.rate.Store(int64(c.ToRate))
	g.conc.Store(int64(c.ToConc))
	return c, true
}

// undo takes the figures back to those before the open fast step (a
// change down for reason, the degradation's), and takes the figures it
// reached as the ones that hurt.
func (g *Governor) undo(s Sample, reason string) (Change, bool) {
	if !g.allowed(s.At, true) {
		return Change{}, false
	}
	rate, conc := int(g.rate.Load()), int(g.conc.Load())
	c := Change{At: s.At, Direction: "down", Reason: reason, FromRate: rate, FromConc: conc,
		ToRate: g.rr.Clamp(min(rate, g.probeR)), ToConc: g.cr.Clamp(min(conc, g.probeC))}
	if c.ToRate == rate && c.ToConc == conc {
		return Change{}, false
	}
	g.lastBad, g.lastBadC = rate, conc
	g.rate.Store(int64(c.ToRate))
	g.conc.Store(int64(c.ToConc))
	return c, true
}

// The size of a step up. MaxStep is the most a careful step adds to a
// figure (15 %); FastStep the most a fast one adds (30 %). A governor's
// steps are fast until the first sign of degradation (a sample above the
// healthy mark): then careful, each step that no sign followed doubling
// the next up to FastStep. A step comes at most every minute /
// max_changes_per_minute, so that the load it adds is seen before the
// next; a fast step that two degraded samples follow within ProbeSeconds
// (before the next change) is undone.
const (
	MaxStep  = 0.15
	FastStep = 0.3
	// ProbeSeconds is how long a fast step stays open to be undone: a
	// step's load shows within seconds (the line fills the new slots,
	// paced), and a degradation later than this is no longer the step's.
	ProbeSeconds = 20
)

// step is the next figure up from v: toward the figure that last
// degraded the origin, not past it; with none, or past it, a Recover
// share of the gap to the ceiling; at most f of v more (past the figure
// that hurt, at most a tenth on the first step), so that the governor
// probes carefully near the figure that hurt.
func (g *Governor) step(v, bad, ceiling int, f float64) int {
	limit := max(int(float64(v)*f), 1)
	if bad > v+1 {
		// Toward the figure that hurt, at most f, not past it: halving
		// the gap instead crept up to it a step at a time.
		return v + min(bad-v, limit)
	}
	up := int(math.Ceil(g.p.Recover * float64(ceiling-v)))
	if bad > 0 && f <= MaxStep {
		limit = max(v/10, 1)
	}
	return v + max(min(up, limit), 0)
}

// inUseCap is the most a figure may be raised to with a step of f: a
// step above what is in use, so that a limit the room does not reach is
// not raised (and a burst cannot later take it all at once).
func inUseCap(inUse int64, f float64) int {
	return int(float64(inUse)*(1+f)) + 1
}

// reaches reports that a figure of limit is reached: what is in use is
// within a tenth of it.
func reaches(inUse int64, limit int) bool {
	return inUse*10 >= int64(limit)*9
}

// startOf is where a figure starts: the configured limit when a ceiling
// above it was written, else the floor.
func startOf(configured int, r Range) int {
	if r.Max > configured {
		return r.Clamp(configured)
	}
	return r.Min
}
