package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestE2EBenchAutopilot: usher bench --self --scenario autopilot, limits
// 3x too high for a real origin in the bench process whose latency rises
// with its concurrency. Over real HTTP, with the same arrivals, the fixed
// limits push the origin's p99 past twice its healthy baseline or its
// errors to 1 % or more; autopilot keeps its p99 within twice the
// baseline and its errors under 1 %.
func TestE2EBenchAutopilot(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "autopilot.svg")
	// The run is bounded (80 s a side); the origin is small (50 requests
	// a second) so that the box's other work does not blur the contrast.
	code, out, errs := runMain(t, "bench", "--self", "--scenario", "autopilot", "--case", "high", "--horizon", "80s",
		"--json", "--plot", plot)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r AutopilotBenchResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(r.Cases) != 1 || r.Cases[0].Case != "high" || len(r.Cases[0].Sides) != 2 {
		t.Fatalf("cases %+v, want high with two sides", r.Cases)
	}
	fixed, auto := r.Cases[0].Sides[0], r.Cases[0].Sides[1]
	for _, s := range []CompareSide{fixed, auto} {
		t.Logf("%s: origin p50 %.0f ms, p99 %.0f ms (healthy %.0f ms, %.2fx), errors %.2f %%, %.0f/s, queue peak %d, changes %d",
			s.Name, s.OriginP50Ms, s.OriginP99Ms, s.HealthyP99Ms, s.P99Ratio, 100*s.ErrorRate, s.ThroughputPerS, s.QueuePeak, s.Changes)
		if s.HealthyP99Ms <= 0 || s.Requests < 1000 || len(s.Seconds) < 60 {
			t.Fatalf("%s: healthy p99 %v ms, %d requests, %d seconds: the run did not load the origin", s.Name, s.HealthyP99Ms, s.Requests, len(s.Seconds))
		}
	}
	if fixed.Name != "fixed limits" || auto.Name != "autopilot" {
		t.Fatalf("sides %q, %q", fixed.Name, auto.Name)
	}
	if !(fixed.P99Ratio > 2 || fixed.ErrorRate >= 0.01) {
		t.Errorf("fixed limits 3x too high: p99 %.2fx healthy, errors %.2f %%; want the origin overloaded (above 2x or 1 %% or more)", fixed.P99Ratio, 100*fixed.ErrorRate)
	}
	if auto.P99Ratio > 2 || auto.ErrorRate >= 0.01 {
		t.Errorf("autopilot: p99 %.2fx healthy, errors %.2f %%; want within 2x and under 1 %%", auto.P99Ratio, 100*auto.ErrorRate)
	}
	if auto.Changes < 1 {
		t.Errorf("autopilot made no change")
	}
	svg, err := os.ReadFile(filepath.Join(filepath.Dir(plot), "autopilot-high.svg"))
	if err != nil || len(svg) < 1000 {
		t.Fatalf("plot: %d bytes, %v", len(svg), err)
	}
}
