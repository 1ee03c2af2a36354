package bench_test

import (
	"testing"
	"time"

	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/bench"
)

// TestSimulatePriorLearned: the design's flash crowd at a tenth (5,000
// visitors in 2 minutes, a room of 200 and 300 a minute, visitors browsing
// 4 minutes and a fifth giving up): the limits alone cannot know the
// browsing, so the first pages are off by about a third. A first event
// teaches the room a prior; the next event's first pages, scaled by it,
// announce the wait within the targets of docs/admission.md (15 % at the
// median, 40 % at the p90), and the line itself is no different: the
// limits hold, no inversion, the same admissions.
func TestSimulatePriorLearned(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("three runs of 5,000 visitors: not in -short or -race runs")
	}
	t.Parallel()
	cfg := bench.SimConfig{
		Room:     simRoom(200, 300, 5*time.Minute, 20*time.Second),
		Arrivals: arrivals(t, "flash:5000@2m"),
		Model: bench.VisitorModel{
			Browse:          bench.MustDist("4m"),
			RequestEvery:    bench.MustDist("5s-15s"),
			AbandonFraction: 0.2,
			Patience:        bench.MustDist("exp:10m"),
		},
	}
	run := func(seed uint64, prior float64) (bench.Result, *bench.LearnedStats) {
		t.Helper()
		c := cfg
		c.Seed, c.Prior, c.Store = seed, prior, memStore(t)
		tl := simulate(t, c)
		res := bench.Report(tl, bench.RoomLimits(&c.Room))
		if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 || res.FIFOInversions != 0 || res.Unfinished != 0 {
			t.Errorf("seed %d, prior %v: %+v", seed, prior, res)
		}
		return res, tl.Learned
	}
	// The earlier event: other visitors of the same crowd.
	_, earlier := run(2, 0)
	if !earlier.OK || earlier.Waiters < analytics.MinLearned || earlier.Prior != 1 {
		t.Fatalf("the earlier event taught %+v, want a prior from at least %d waiters", earlier, analytics.MinLearned)
	}
	// Browsing 4 minutes in sessions counted 5: the limits forecast the
	// waits too short, by about a third.
	if earlier.Factor < 1.2 || earlier.Factor > 2 {
		t.Errorf("learned factor %.3f, want 1.2 to 2 (waits a third longer than the limits forecast)", earlier.Factor)
	}
	cold, _ := run(1, 0)
	warm, taught := run(1, earlier.Factor)
	t.Logf("learned %.3f from %d waiters; first page error: no prior median %.1f %% p90 %.1f %%; with it median %.1f %% p90 %.1f %%",
		earlier.Factor, earlier.Waiters, cold.ETAErrorMedianPct, cold.ETAErrorP90Pct, warm.ETAErrorMedianPct, warm.ETAErrorP90Pct)
	if warm.ETAErrorMedianPct > 15 || warm.ETAErrorP90Pct > 40 {
		t.Errorf("with the prior, the first page is off by %.1f %% at the median and %.1f %% at the p90, want within 15 %% and 40 %%",
			warm.ETAErrorMedianPct, warm.ETAErrorP90Pct)
	}
	if warm.ETAErrorMedianPct >= cold.ETAErrorMedianPct {
		t.Errorf("the prior did not help: median %.1f %% with it, %.1f %% without", warm.ETAErrorMedianPct, cold.ETAErrorMedianPct)
	}
	// The estimate changes what visitors are told, never who goes in when.
	if warm.Admitted != cold.Admitted || warm.WaitP50S != cold.WaitP50S {
		t.Errorf("the prior changed the line: admitted %d vs %d, wait p50 %.1f s vs %.1f s", warm.Admitted, cold.Admitted, warm.WaitP50S, cold.WaitP50S)
	}
	// What the event with the prior teaches is the same ratio: the ratios
	// are taken against the limits' forecast, not the scaled one.
	if d := taught.Factor - earlier.Factor; d < -0.1 || d > 0.1 || taught.Prior != earlier.Factor {
		t.Errorf("the event with prior %.3f taught %+v, want about the same factor", earlier.Factor, taught)
	}
}
