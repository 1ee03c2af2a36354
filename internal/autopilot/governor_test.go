package autopilot

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func settings(rate, conc int, a usher.Autopilot) *usher.Settings {
	a.Enabled = true
	return &usher.Settings{NewUsersPerMinute: rate, TotalActiveUsers: conc, Autopilot: a}
}

// feeder feeds a governor one sample a simulated second, from a room
// that uses its limits to the full: its first sample finds the ceilings
// in use (unless fromFloor: the floors), each later one the governor's
// figures.
type feeder struct {
	t         *testing.T
	g         *Governor
	sec       int
	log       []Change
	fromFloor bool
}

func (f *feeder) feed(lat time.Duration, count, errs int64, waiting bool) (Change, bool) {
	f.t.Helper()
	s := Sample{At: t0.Add(time.Duration(f.sec) * time.Second), Count: count, Errors: errs, Latency: lat, Waiting: waiting,
		Active: f.g.conc.Load(), AdmittedLastMinute: f.g.rate.Load()}
	if f.sec == 0 && !f.fromFloor {
		s.Active, s.AdmittedLastMinute = int64(f.g.cr.Max), int64(f.g.rr.Max)
	}
	f.sec++
	c, ok := f.g.Observe(s)
	if ok {
		f.log = append(f.log, c)
	}
	return c, ok
}

// learn feeds n healthy samples around 100 ms.
func (f *feeder) learn(n int, rng *rand.Rand) {
	for range n {
		f.feed(time.Duration(95+rng.IntN(11))*time.Millisecond, 100, 0, false)
	}
}

func TestBounds(t *testing.T) {
	for _, tc := range []struct {
		name             string
		rate, conc       int
		a                usher.Autopilot
		wantRate, wantCC Range
	}{
		{"defaults", 600, 1000, usher.Autopilot{}, Range{60, 600}, Range{100, 1000}},
		{"small limits floor at 1", 5, 3, usher.Autopilot{}, Range{1, 5}, Range{1, 3}},
		{"explicit ceiling above", 600, 1000, usher.Autopilot{MaxNewUsersPerMinute: 1800, MaxTotalActiveUsers: 3000},
			Range{60, 1800}, Range{100, 3000}},
		{"explicit floor", 600, 1000, usher.Autopilot{MinNewUsersPerMinute: 200, MinTotalActiveUsers: 10}, Range{200, 600}, Range{10, 1000}},
		{"floor above derived ceiling is lowered", 600, 1000, usher.Autopilot{MinNewUsersPerMinute: 900}, Range{600, 600}, Range{100, 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, c := Bounds(settings(tc.rate, tc.conc, tc.a))
			if r != tc.wantRate || c != tc.wantCC {
				t.Errorf("Bounds = %v, %v; want %v, %v", r, c, tc.wantRate, tc.wantCC)
			}
		})
	}
}

// TestSlowStart: a governor starts at the configured limit where a
// ceiling above it is written, else at the floor, and takes over, at its
// first sample, what the room has in use if more, within the bounds.
func TestSlowStart(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true, MaxNewUsersPerMinute: 1800}))
	if r, c := g.Limits(); r != 600 || c != 100 {
		t.Errorf("Limits = %d, %d; want the configured rate 600 (a ceiling above it) and the concurrency's floor 100", r, c)
	}
	g.Observe(Sample{At: t0, Active: 400, AdmittedLastMinute: 300})
	if r, c := g.Limits(); r != 600 || c != 400 {
		t.Errorf("Limits after a first sample = %d, %d; want 600 and what is in use, 400", r, c)
	}
	g = New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	if r, c := g.Limits(); r != 60 || c != 100 {
		t.Errorf("Limits = %d, %d; want the floors 60, 100", r, c)
	}
	g.Observe(Sample{At: t0, Active: 400, AdmittedLastMinute: 30})
	if r, c := g.Limits(); r != 60 || c != 400 {
		t.Errorf("Limits after a first sample = %d, %d; want the floor 60 and what is in use, 400", r, c)
	}
	g = New(settings(600, 1000, usher.Autopilot{}))
	g.Observe(Sample{At: t0, Active: 5000, AdmittedLastMinute: 5000})
	if r, c := g.Limits(); r != 600 || c != 0 {
		t.Errorf("Limits without concurrency = %d, %d; want the ceiling 600, 0 (not governed)", r, c)
	}
}

// TestRisesInSteps: from the floor, with a line waiting and a healthy
// origin, the figures rise only once the baseline is learned, by at most
// FastStep a step, a step at most every minute / max_changes_per_minute,
// and never far above what is in use.
func TestRisesInSteps(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	f := &feeder{t: t, g: g, fromFloor: true}
	for range 600 {
		f.feed(100*time.Millisecond, 100, 0, true)
	}
	if r, c := g.Limits(); r != 600 || c != 1000 {
		t.Fatalf("after 10 minutes: %d, %d; want 600, 1000", r, c)
	}
	if len(f.log) == 0 || f.log[0].At.Before(t0.Add(DefaultBaselineSamples*time.Second)) {
		t.Fatalf("changes %+v: want the first step up after the %d seconds of the baseline", f.log, DefaultBaselineSamples)
	}
	// Fast steps: from the floor to half the ceiling within 75 s of the
	// baseline (7 steps of FastStep; careful steps of MaxStep would take
	// 12, at least 120 s).
	var half time.Time
	for _, c := range f.log {
		if c.ToRate >= 300 {
			half = c.At
			break
		}
	}
	if d := half.Sub(t0.Add(DefaultBaselineSamples * time.Second)); half.IsZero() || d > 75*time.Second {
		t.Errorf("the rate reached 300 %v after the baseline (changes %+v), want within 75 s", d, f.log)
	}
	for i, c := range f.log {
		if c.Direction != "up" || float64(c.ToRate) > float64(c.FromRate)*(1+FastStep)+1 || float64(c.ToConc) > float64(c.FromConc)*(1+FastStep)+1 {
			t.Fatalf("change %d: %+v, want up by at most FastStep", i, c)
		}
		if i > 0 && c.At.Sub(f.log[i-1].At) < time.Minute/DefaultMaxChangesPerMinute {
			t.Fatalf("changes %d and %d %v apart", i-1, i, c.At.Sub(f.log[i-1].At))
		}
	}
	// A limit the room does not reach is not raised.
	g = New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	for i := range 600 {
		g.Observe(Sample{At: t0.Add(time.Duration(i) * time.Second), Count: 100, Latency: 100 * time.Millisecond,
			Waiting: true, Active: 150, AdmittedLastMinute: 300})
	}
	if _, c := g.Limits(); c > inUseCap(150, FastStep) {
		t.Errorf("concurrency raised to %d with 150 in use, want at most one step above it (%d)", c, inUseCap(150, FastStep))
	}
}

// TestLowersWithinSeconds: once the baseline is learned, a latency over
// the threshold halves the rate (and the concurrency) within
// DegradedSeconds samples.
func TestLowersWithinSeconds(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	f := &feeder{t: t, g: g}
	f.learn(DefaultBaselineSamples, rng)
	st := g.State()
	if st.Learning || st.Baseline < 95*time.Millisecond || st.Baseline > 105*time.Millisecond {
		t.Fatalf("after %d samples: learning %v, baseline %v; want learned about 100ms", DefaultBaselineSamples, st.Learning, st.Baseline)
	}
	if d := st.Threshold - time.Duration(float64(st.Baseline)*DefaultFactor); d < -time.Millisecond || d > time.Millisecond {
		t.Fatalf("threshold %v, want %v x the baseline (3 sigma of a narrow baseline is below it)", st.Threshold, DefaultFactor)
	}
	var when int
	for i := 1; i <= 10; i++ {
		if c, ok := f.feed(400*time.Millisecond, 100, 0, true); ok {
			when = i
			if c.Direction != "down" || c.Reason != ReasonLatency || c.ToRate != 300 || c.ToConc != 500 {
				t.Errorf("change %+v, want down for latency to 300/min and 500", c)
			}
			break
		}
	}
	if when == 0 || when > DegradedSeconds {
		t.Fatalf("first decrease after %d degraded seconds, want within %d", when, DegradedSeconds)
	}
	if r, c := g.Limits(); r != 300 || c != 500 {
		t.Errorf("Limits = %d, %d; want 300, 500", r, c)
	}
	if st := g.State(); !st.Degraded || st.Changes != 1 || st.Last.Reason != ReasonLatency {
		t.Errorf("State %+v, want degraded, one change for latency", st)
	}
}

// TestDecreaseStartsFromUse: a cut starts from the figures in use when
// they are below the limits, so that it bites at once.
func TestDecreaseStartsFromUse(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	f := &feeder{t: t, g: g}
	f.learn(DefaultBaselineSamples, rand.New(rand.NewPCG(1, 2)))
	for i := range DegradedSeconds {
		c, ok := g.Observe(Sample{At: t0.Add(time.Duration(100+i) * time.Second), Count: 100, Latency: time.Second,
			Active: 400, AdmittedLastMinute: 200})
		if i == DegradedSeconds-1 && (!ok || c.ToRate != 100 || c.ToConc != 200) {
			t.Fatalf("change %+v (%v), want 200/min x 0.5 and 400 x 0.5", c, ok)
		}
	}
}

func TestErrorsAndLatencyTarget(t *testing.T) {
	t.Run("errors while learning", func(t *testing.T) {
		g := New(settings(600, 1000, usher.Autopilot{}))
		f := &feeder{t: t, g: g}
		var c Change
		var ok bool
		for range DegradedSeconds {
			c, ok = f.feed(50*time.Millisecond, 100, 5, false) // 5 % errors
		}
		if !ok || c.Reason != ReasonErrors || c.ToRate != 300 || c.ErrorRate != 0.05 {
			t.Fatalf("change %+v (%v), want down for errors at 5%%", c, ok)
		}
	})
	t.Run("few responses do not judge errors", func(t *testing.T) {
		g := New(settings(600, 1000, usher.Autopilot{}))
		f := &feeder{t: t, g: g}
		for range 10 {
			if c, ok := f.feed(50*time.Millisecond, 3, 1, false); ok {
				t.Fatalf("change %+v on 1 error in 3 responses", c)
			}
		}
	})
	t.Run("latency target while learning", func(t *testing.T) {
		g := New(settings(600, 1000, usher.Autopilot{LatencyTarget: 300 * time.Millisecond}))
		f := &feeder{t: t, g: g}
		var c Change
		var ok bool
		for range DegradedSeconds {
			c, ok = f.feed(time.Second, 100, 0, false)
		}
		if !ok || c.Reason != ReasonLatencyTarget || c.Threshold != 300*time.Millisecond {
			t.Fatalf("change %+v (%v), want down for the latency target", c, ok)
		}
		if !g.State().Learning {
			t.Error("degraded samples were learned as the baseline")
		}
	})
}

// TestRecovers: after a degradation, a healthy origin with a line waiting
// gets its figures back up to the ceiling, in steps; without a line they
// stay.
func TestRecovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	f := &feeder{t: t, g: g}
	f.learn(DefaultBaselineSamples, rng)
	for range 40 {
		f.feed(time.Second, 100, 0, true)
	}
	if r, _ := g.Limits(); r >= 300 {
		t.Fatalf("rate %d after 40 s degraded, want well below 600", r)
	}
	low, _ := g.Limits()
	for range 60 {
		f.feed(100*time.Millisecond, 100, 0, false) // healthy, nobody waits
	}
	if r, _ := g.Limits(); r != low {
		t.Fatalf("rate went from %d to %d with nobody waiting", low, r)
	}
	ups := 0
	for range 600 {
		if c, ok := f.feed(time.Duration(95+rng.IntN(11))*time.Millisecond, 100, 0, true); ok {
			if c.Direction != "up" || c.ToRate < c.FromRate {
				t.Fatalf("change %+v on a healthy origin", c)
			}
			ups++
		}
	}
	if r, c := g.Limits(); r != 600 || c != 1000 {
		t.Fatalf("after 10 healthy minutes: %d, %d; want back at 600, 1000", r, c)
	}
	if ups < 2 {
		t.Errorf("recovered in %d step(s), want gradual", ups)
	}
}

// TestSteadyOriginDoesNotOscillate: a steady, noisy origin makes no
// changes once the figures reach the ceiling, and latencies within the
// hysteresis band make none at all.
func TestSteadyOriginDoesNotOscillate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	g := New(settings(600, 1000, usher.Autopilot{}))
	f := &feeder{t: t, g: g}
	f.learn(DefaultBaselineSamples, rng)
	for range 3600 {
		f.feed(time.Duration(90+rng.IntN(21))*time.Millisecond, 100, 0, true)
	}
	if len(f.log) != 0 {
		t.Fatalf("%d changes in an hour of a steady origin, first %+v", len(f.log), f.log[0])
	}
	// Within the band between healthy and degraded: hold, below the
	// ceiling too.
	g.Adopt(300, 0)
	st := g.State()
	band := (g.healthyBelow() + st.Threshold) / 2
	for range 600 {
		f.feed(band, 100, 0, true)
	}
	if len(f.log) != 0 {
		t.Fatalf("%d changes in the hysteresis band (%v), first %+v", len(f.log), band, f.log[0])
	}
}

// TestBoundedChangesAndRange: whatever the origin does, the figures stay
// in [floor, ceiling] (an explicit ceiling above the configured limits
// included) and the changes in any minute stay within the cap.
func TestBoundedChangesAndRange(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		a := usher.Autopilot{Concurrency: true, MinNewUsersPerMinute: 50, MaxNewUsersPerMinute: 1500,
			MaxTotalActiveUsers: 2500, MaxChangesPerMinute: 1 + int(seed%8)}
		s := settings(500, 800, a)
		g := New(s)
		rr, cr := Bounds(s)
		f := &feeder{t: t, g: g}
		for range 3600 {
			lat := time.Duration(50+rng.IntN(1000)) * time.Millisecond
			if rng.IntN(3) == 0 {
				lat = time.Duration(90+rng.IntN(20)) * time.Millisecond
			}
			count := int64(rng.IntN(200))
			f.feed(lat, count, int64(rng.IntN(int(count)/20+1)), rng.IntN(2) == 0)
			if r, c := g.Limits(); r < rr.Min || r > rr.Max || c < cr.Min || c > cr.Max {
				t.Fatalf("seed %d at %d s: %d, %d outside %v, %v", seed, f.sec, r, c, rr, cr)
			}
		}
		for _, dir := range []string{"up", "down"} {
			var log []Change
			for _, c := range f.log {
				if c.Direction == dir {
					log = append(log, c)
				}
			}
			for i := range log {
				n := 0
				for j := i; j < len(log) && log[j].At.Sub(log[i].At) < time.Minute; j++ {
					n++
				}
				if n > a.MaxChangesPerMinute {
					t.Fatalf("seed %d: %d changes %s within a minute from %v, cap %d", seed, n, dir, log[i].At, a.MaxChangesPerMinute)
				}
			}
		}
		if len(f.log) == 0 {
			t.Fatalf("seed %d: no change at all on a wild origin", seed)
		}
	}
}

// TestClosedLoop: a toy origin whose latency rises steeply past a
// capacity of 300 admissions a minute; limits 3x too high. The governor
// brings the rate under the capacity within seconds, the origin's latency
// back under twice its baseline, and holds there with few changes.
func TestClosedLoop(t *testing.T) {
	const capacity = 300.0
	g := New(settings(900, 3000, usher.Autopilot{}))
	origin := func(rate int) time.Duration {
		u := float64(rate) / capacity
		if u < 0.8 {
			return 100 * time.Millisecond
		}
		return time.Duration(100*(1+10*(u-0.8))) * time.Millisecond // 3x capacity: 2.3 s
	}
	f := &feeder{t: t, g: g}
	for range DefaultBaselineSamples {
		f.feed(100*time.Millisecond, 100, 0, true) // before the surge, lightly loaded
	}
	var over int
	for i := range 1800 {
		r, _ := g.Limits()
		f.feed(origin(r), 100, 0, true)
		if i > 30 && origin(r) > 200*time.Millisecond {
			over++
		}
	}
	if over > 1800/50 {
		t.Errorf("latency over twice the baseline in %d of the seconds after the first 30, want under 2 %%", over)
	}
	if n := len(f.log); n > 1800/60*DefaultMaxChangesPerMinute/2 {
		t.Errorf("%d changes in 30 minutes", n)
	}
	if r, _ := g.Limits(); r < 120 || r > 330 {
		t.Errorf("rate settled at %d, want near the capacity of 300", r)
	}
}

// TestBaselineIgnoresOutliers: a few slow seconds while the baseline is
// learned (a busy machine, a cold cache) do not raise the threshold.
func TestBaselineIgnoresOutliers(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{}))
	f := &feeder{t: t, g: g}
	f.learn(DefaultBaselineSamples-3, rand.New(rand.NewPCG(9, 9)))
	for range 3 {
		f.feed(900*time.Millisecond, 100, 0, false)
	}
	st := g.State()
	if st.Learning || st.Baseline > 110*time.Millisecond || st.Threshold > 150*time.Millisecond {
		t.Fatalf("baseline %v, threshold %v after 3 slow seconds of %d; want about 100ms and 130ms",
			st.Baseline, st.Threshold, DefaultBaselineSamples)
	}
}

// TestFastStepUndone: a fast step up that two degraded samples follow
// (one alone may be the machine's) is undone at the second (back to the
// figures before it, a change down for the degradation's reason); the steps
// after it are careful ones (at most MaxStep) until one passes without a
// sign, and a decrease for a lasting degradation still comes.
func TestFastStepUndone(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{Concurrency: true}))
	f := &feeder{t: t, g: g, fromFloor: true}
	f.learn(DefaultBaselineSamples, rand.New(rand.NewPCG(1, 1)))
	var up Change
	for range 60 {
		if c, ok := f.feed(100*time.Millisecond, 100, 0, true); ok {
			up = c
			break
		}
	}
	if up.Direction != "up" || float64(up.ToRate) <= float64(up.FromRate)*(1+MaxStep)+1 {
		t.Fatalf("first step %+v, want a fast one (more than MaxStep)", up)
	}
	if c, ok := f.feed(400*time.Millisecond, 100, 0, true); ok {
		t.Fatalf("after one degraded sample: %+v, want no change yet", c)
	}
	f.feed(100*time.Millisecond, 100, 0, true)
	c, ok := f.feed(400*time.Millisecond, 100, 0, true)
	if !ok || c.Direction != "down" || c.Reason != ReasonLatency || c.ToRate != up.FromRate || c.ToConc != up.FromConc {
		t.Fatalf("after a second degraded sample: %+v (%v), want the step undone to %d, %d", c, ok, up.FromRate, up.FromConc)
	}
	// Healthy again: careful steps, never past the figure that hurt at
	// once.
	var next []Change
	for range 120 {
		if c, ok := f.feed(100*time.Millisecond, 100, 0, true); ok {
			next = append(next, c)
		}
	}
	if len(next) == 0 {
		t.Fatal("no step up after the undone one")
	}
	if c := next[0]; c.Direction != "up" || float64(c.ToRate) > float64(c.FromRate)*(1+MaxStep)+1 || c.ToRate > up.ToRate {
		t.Errorf("the step after the undone one: %+v, want careful (at most MaxStep) and not past %d", c, up.ToRate)
	}
	// A lasting degradation: a decrease within DegradedSeconds of the
	// spacing.
	before, _ := g.Limits()
	var down bool
	for range 12 {
		if c, ok := f.feed(time.Second, 100, 0, true); ok && c.Direction == "down" && c.ToRate < before {
			down = true
			break
		}
	}
	if !down {
		t.Errorf("no decrease in 12 degraded seconds")
	}
}

// TestOldStepNotUndone: a degradation long after a fast step (more than
// ProbeSeconds, no step since: nobody waited) is not the step's: the
// figures come down by the decrease, after DegradedSeconds in a row, not
// by an undo.
func TestOldStepNotUndone(t *testing.T) {
	g := New(settings(600, 1000, usher.Autopilot{}))
	f := &feeder{t: t, g: g, fromFloor: true}
	f.learn(DefaultBaselineSamples, rand.New(rand.NewPCG(2, 2)))
	var up Change
	for range 60 {
		if c, ok := f.feed(100*time.Millisecond, 100, 0, true); ok {
			up = c
			break
		}
	}
	if up.Direction != "up" {
		t.Fatal("no step up")
	}
	// One degraded second (the machine's): no change, and the next step
	// is a careful one.
	if c, ok := f.feed(400*time.Millisecond, 100, 0, true); ok {
		t.Fatalf("one degraded second after the step: %+v, want none", c)
	}
	for range ProbeSeconds + 1 {
		if c, ok := f.feed(100*time.Millisecond, 100, 0, false); ok {
			t.Fatalf("change %+v with nobody waiting", c)
		}
	}
	if c, ok := f.feed(400*time.Millisecond, 100, 0, true); ok {
		t.Fatalf("a second degraded second %d s after the step: %+v, want no undo", ProbeSeconds+2, c)
	}
	c, ok := f.feed(400*time.Millisecond, 100, 0, true)
	if want := g.rr.Clamp(int(float64(up.ToRate) * DefaultDecrease)); !ok || c.Direction != "down" || c.ToRate != want {
		t.Errorf("the second degraded second: %+v (%v), want the decrease to half of %d (at least the floor): %d", c, ok, up.ToRate, want)
	}
}

// TestNoiseSlowsTheClimb: one degraded second alone (a busy machine)
// changes nothing: the steps stay fast. Two within ProbeSeconds are a
// sign: the steps after it are careful ones (at most MaxStep), and each
// step without one doubles the next again.
func TestNoiseSlowsTheClimb(t *testing.T) {
	climb := func(degraded ...int) []Change {
		g := New(settings(60000, 100000, usher.Autopilot{}))
		f := &feeder{t: t, g: g, fromFloor: true}
		f.learn(DefaultBaselineSamples, rand.New(rand.NewPCG(3, 3)))
		var after []Change
		for i := range 200 {
			lat := 100 * time.Millisecond
			if slices.Contains(degraded, i) {
				lat = 400 * time.Millisecond
			}
			c, ok := f.feed(lat, 100, 0, true)
			if ok && c.Direction != "up" {
				continue // an undone step
			}
			if ok && i > degraded[len(degraded)-1] {
				after = append(after, c)
			}
		}
		if len(after) < 3 {
			t.Fatalf("degraded at %v: steps after: %+v", degraded, after)
		}
		return after
	}
	share := func(c Change) float64 { return float64(c.ToRate-c.FromRate) / float64(c.FromRate) }
	if s := share(climb(30)[0]); s <= MaxStep+0.01 {
		t.Errorf("the first step after a lone degraded second added %.0f %%, want a fast one (more than %.0f %%)", 100*s, 100*MaxStep)
	}
	after := climb(30, 36)
	if s := share(after[0]); s > MaxStep+0.01 {
		t.Errorf("the first step after two degraded seconds added %.0f %%, want at most %.0f %%", 100*s, 100*MaxStep)
	}
	if s0, s1 := share(after[0]), share(after[1]); s1 < 2*s0*0.9 {
		t.Errorf("steps after it added %.0f %% then %.0f %%: want the second twice the first", 100*s0, 100*s1)
	}
}
