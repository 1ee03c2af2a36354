package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestE2EBenchAutopilot: usher bench --self --scenario autopilot, a
// shorter version of the runs in docs/benchmarks.md: a real origin in the
// bench process whose latency rises with its concurrency, usher in front
// of it, the bench's visitors over real HTTP, the two cases at once: 3x
// too high its fixed side then its autopilot side, 70 s each; 3x too low
// both sides at once (--sides-at-once), 110 s.
//
//   - limits 3x too high (200 visitors in 10 s): the fixed limits push
//     the origin's p99 past twice the healthy one or its errors to 1 % or
//     more; autopilot keeps its p99 within twice the healthy one and its
//     errors under 1 %.
//   - limits 3x too low, a ceiling above them (120 visitors in 5 s):
//     autopilot drains the line faster: it drains it first, or, when the
//     machine's noise holds it back so that neither drains within the
//     run, it leaves at most three quarters of the fixed limits' line;
//     and it lets more in, with the origin's p99 within twice the healthy
//     one and its errors under 1 %. (docs/benchmarks.md carries the full
//     3-minute runs, where it drains the line and the fixed limits do
//     not.)
//
// The healthy p99 is a control origin's, of the same model, loaded at
// low load over the same time (see autopilotSide in internal/bench/selfbench).
func TestE2EBenchAutopilot(t *testing.T) {
	dir := t.TempDir()
	type run struct {
		name, arrivals, horizon string
		atOnce                  bool
		code                    int
		out, errs               string
		res                     AutopilotBenchResult
	}
	runs := []*run{
		{name: "high", arrivals: "flash:200@10s", horizon: "70s"},
		{name: "low", arrivals: "flash:120@5s", horizon: "110s", atOnce: true},
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		args := []string{"bench", "--self", "--scenario", "autopilot", "--case", r.name,
			"--arrivals", r.arrivals, "--horizon", r.horizon, "--json", "--plot", filepath.Join(dir, "autopilot.svg")}
		if r.atOnce {
			args = append(args, "--sides-at-once")
		}
		wg.Go(func() { r.code, r.out, r.errs = runMain(t, args...) })
	}
	wg.Wait()
	sides := map[string][2]CompareSide{}
	for _, r := range runs {
		if r.code != 0 {
			t.Fatalf("case %s: exit %d: %s", r.name, r.code, r.errs)
		}
		if err := json.Unmarshal([]byte(r.out), &r.res); err != nil {
			t.Fatalf("case %s: %v: %s", r.name, err, r.out)
		}
		if len(r.res.Cases) != 1 || r.res.Cases[0].Case != r.name || len(r.res.Cases[0].Sides) != 2 {
			t.Fatalf("case %s: cases %+v, want one with two sides", r.name, r.res.Cases)
		}
		fixed, auto := r.res.Cases[0].Sides[0], r.res.Cases[0].Sides[1]
		if fixed.Name != "fixed limits" || auto.Name != "autopilot" {
			t.Fatalf("case %s: sides %q, %q", r.name, fixed.Name, auto.Name)
		}
		for _, s := range []CompareSide{fixed, auto} {
			t.Logf("%s, %s: origin p50 %.0f ms, p99 %.0f ms (healthy %.0f ms, %.2fx), errors %.2f %%, %.0f/s, queue peak %d, admitted %d of %d, drained %v at %.0f s, changes %d",
				r.name, s.Name, s.OriginP50Ms, s.OriginP99Ms, s.HealthyP99Ms, s.P99Ratio, 100*s.ErrorRate, s.ThroughputPerS,
				s.QueuePeak, s.Admitted, s.Visitors, s.Drained, s.DrainedS, s.Changes)
			// (A side ends before its horizon once every visitor has left.)
			if s.HealthyP99Ms <= 0 || s.Requests < 500 || len(s.Seconds) < 30 {
				t.Fatalf("%s, %s: healthy p99 %v ms, %d requests, %d seconds: the run did not load the origin",
					r.name, s.Name, s.HealthyP99Ms, s.Requests, len(s.Seconds))
			}
		}
		if auto.P99Ratio > 2 || auto.ErrorRate >= 0.01 {
			t.Errorf("%s, autopilot: p99 %.2fx healthy, errors %.2f %%; want within 2x and under 1 %%", r.name, auto.P99Ratio, 100*auto.ErrorRate)
		}
		if auto.Changes < 1 {
			t.Errorf("%s: autopilot made no change", r.name)
		}
		svg, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("autopilot-%s.svg", r.name)))
		if err != nil || len(svg) < 1000 {
			t.Errorf("%s: plot: %d bytes, %v", r.name, len(svg), err)
		}
		sides[r.name] = [2]CompareSide{fixed, auto}
	}
	if fixed := sides["high"][0]; !(fixed.P99Ratio > 2 || fixed.ErrorRate >= 0.01) {
		t.Errorf("fixed limits 3x too high: p99 %.2fx healthy, errors %.2f %%; want the origin overloaded (above 2x or 1 %% or more)",
			fixed.P99Ratio, 100*fixed.ErrorRate)
	}
	fixed, auto := sides["low"][0], sides["low"][1]
	left := func(s CompareSide) int { return s.Visitors - s.Admitted }
	first := auto.Drained && (!fixed.Drained || auto.DrainedS < fixed.DrainedS)
	shorter := !auto.Drained && !fixed.Drained && 4*left(auto) <= 3*left(fixed)
	if !first && !shorter {
		t.Errorf("limits 3x too low: autopilot drained %v at %.0f s (%d left), fixed limits %v at %.0f s (%d left); want autopilot to drain the line first, or to leave at most three quarters of the fixed limits' line",
			auto.Drained, auto.DrainedS, left(auto), fixed.Drained, fixed.DrainedS, left(fixed))
	}
	if auto.Admitted <= fixed.Admitted {
		t.Errorf("limits 3x too low: autopilot let %d in, fixed limits %d; want more", auto.Admitted, fixed.Admitted)
	}
}
