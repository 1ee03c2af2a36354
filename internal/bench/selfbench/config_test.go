package selfbench

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestCheckFills: Check fills in what the scenarios read parsed (the
// standing room's steps, by default up to --max-waiters; the throughput
// targets; the autopilot scenario's own defaults where its flags are not
// set) and names each bad flag in its problems.
func TestCheckFills(t *testing.T) {
	c := Config{Scenario: "standing-room", Self: true, Refresh: 2 * time.Second, Bound: time.Second,
		MaxWaiters: 100000, MaxRefresh: time.Minute, Nodes: 1}
	if bad := c.Check(map[string]bool{"scenario": true}); len(bad) > 0 {
		t.Fatalf("problems %q", bad)
	}
	if want := []int{1000, 10000, 100000}; !slices.Equal(c.steps, want) {
		t.Errorf("default steps %v, want %v", c.steps, want)
	}
	c.Steps = "500,2000"
	if bad := c.Check(map[string]bool{"steps": true}); len(bad) > 0 || !slices.Equal(c.steps, []int{500, 2000}) {
		t.Errorf("--steps 500,2000: steps %v, problems %q", c.steps, bad)
	}

	c = Config{Scenario: "throughput", Self: true, Rounds: 1, Duration: time.Second, Workers: 4, Targets: "admitted,origin", Nodes: 1}
	if bad := c.Check(map[string]bool{"targets": true}); len(bad) > 0 || !slices.Equal(c.targets, []string{"admitted", "origin"}) {
		t.Errorf("--targets admitted,origin: targets %v, problems %q", c.targets, bad)
	}

	c = Config{Scenario: "autopilot", Self: true, Arrivals: "flash:5000@30s", Browse: "2s-8s", Every: "1s-3s", Patience: "5s-60s",
		Abandon: 0.2, Refresh: 2 * time.Second, Case: "high", Horizon: time.Minute, Nodes: 1}
	if bad := c.Check(map[string]bool{"every": true}); len(bad) > 0 {
		t.Fatalf("problems %q", bad)
	}
	if c.Arrivals != autopilotArrivals || c.Browse != autopilotBrowse || c.Every != "1s-3s" || c.Abandon != 0 {
		t.Errorf("autopilot: arrivals %q, browse %q, every %q, abandon %v: want its own defaults but for --every",
			c.Arrivals, c.Browse, c.Every, c.Abandon)
	}

	c = Config{Scenario: "throughput", Self: true, Rounds: 0, Duration: time.Second, Workers: 4, Nodes: 1}
	bad := c.Check(map[string]bool{"rounds": true, "seed": true})
	if len(bad) != 2 || !strings.HasPrefix(bad[0], "--seed: ") || !strings.HasPrefix(bad[1], "--rounds: ") {
		t.Errorf("problems %q: want --seed (not throughput's) and --rounds", bad)
	}
}
