package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/bench/selfbench"
)

// The bench's results, as the end-to-end tests here read them.
type (
	ThroughputResult = selfbench.ThroughputResult
	Figure           = selfbench.Figure
	StandingResult   = selfbench.StandingResult
)

// AutopilotBenchResult is usher bench --scenario autopilot's JSON as the
// tests read it: each side in the fields of usher simulate --compare's.
type AutopilotBenchResult struct {
	Cases []struct {
		Case  string        `json:"case"`
		Sides []CompareSide `json:"sides"`
	} `json:"cases"`
}

// benchThroughput runs the throughput scenario as usher bench does.
func (m *Main) benchThroughput(ctx context.Context, f *selfbench.Config) (*ThroughputResult, error) {
	return selfbench.Throughput(ctx, f, m.benchProduct())
}

// median is the median of xs, 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestBenchBadFlags: every bad value or combination is refused before
// anything runs, with exit code 2 and a line naming the flag.
func TestBenchBadFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "plot.svg")
	tests := []struct {
		name string
		args []string
		want string // on stderr
	}{
		{"unknown scenario", []string{"--self", "--scenario", "stampede"}, `--scenario: unknown scenario "stampede"`},
		{"no self, no target", nil, "--self: needed"},
		{"self and target", []string{"--self", "--target", "http://127.0.0.1:8080/"}, "--target: with --self"},
		{"target not a URL", []string{"--target", "127.0.0.1:8080"}, `--target: "127.0.0.1:8080" is not an http:// or https:// URL`},
		{"target with throughput", []string{"--target", "http://x/", "--scenario", "throughput"}, "--target: --scenario throughput does not use it"},
		{"arrivals", []string{"--self", "--arrivals", "flash:lots@1m"}, "--arrivals: "},
		{"arrivals kind", []string{"--self", "--arrivals", "crowd:10@1s"}, `--arrivals: arrivals "crowd:10@1s": unknown kind`},
		{"browse", []string{"--self", "--browse", "a while"}, "--browse: "},
		{"every", []string{"--self", "--every", "-3s"}, "--every: "},
		{"patience", []string{"--self", "--patience", "5s-"}, "--patience: "},
		{"abandon over 1", []string{"--self", "--abandon", "20"}, "--abandon: 20 is not a share from 0 to 1"},
		{"abandon negative", []string{"--self", "--abandon", "-0.1"}, "--abandon: -0.1 is not a share"},
		{"total", []string{"--self", "--total", "0"}, "--total: 0: a room lets at least 1 visitor in"},
		{"per-minute", []string{"--self", "--per-minute", "-5"}, "--per-minute: -5: a room lets at least 1 visitor in a minute"},
		{"session", []string{"--self", "--session", "2s"}, "--session: 2s: a room's session_duration is at least 10s"},
		{"refresh low", []string{"--self", "--refresh", "500ms"}, "--refresh: 500ms: a room's refresh_interval is from 1s to 5m0s"},
		{"refresh high", []string{"--self", "--scenario", "standing-room", "--refresh", "10m"}, "--refresh: 10m0s: a room's refresh_interval"},
		{"plot folder", []string{"--self", "--plot", missing}, "--plot: cannot write " + missing},
		{"plot with throughput", []string{"--self", "--scenario", "throughput", "--plot", "x.svg"}, "--plot: --scenario throughput does not use it"},
		{"rounds", []string{"--self", "--scenario", "throughput", "--rounds", "0"}, "--rounds: 0: at least 1"},
		{"duration", []string{"--self", "--scenario", "throughput", "--duration", "0s"}, "--duration: 0s: must be above zero"},
		{"workers", []string{"--self", "--scenario", "throughput", "--workers", "-1"}, "--workers: -1: at least 1"},
		{"nodes without redis", []string{"--self", "--nodes", "3"}, "--nodes: several nodes share a store: give --redis ADDR"},
		{"nodes", []string{"--self", "--redis", "127.0.0.1:6379", "--nodes", "0"}, "--nodes: 0: from 1 to 16"},
		{"clock-slack without redis", []string{"--self", "--clock-slack", "0s"}, "--clock-slack: nodes on the embedded store count sessions exactly: give --redis ADDR"},
		{"clock-slack fraction", []string{"--self", "--redis", "127.0.0.1:6379", "--clock-slack", "500.5ms"}, "--clock-slack: 500.5ms: whole milliseconds from 0s to 10s"},
		{"clock-slack long", []string{"--self", "--redis", "127.0.0.1:6379", "--clock-slack", "11s"}, "--clock-slack: 11s: whole milliseconds from 0s to 10s"},
		{"clock-slack with throughput", []string{"--self", "--scenario", "throughput", "--redis", "127.0.0.1:6379", "--clock-slack", "0s"}, "--clock-slack: --scenario throughput does not use it"},
		{"redis without self", []string{"--target", "http://127.0.0.1:1/", "--redis", "127.0.0.1:6379"}, "--redis: needs --self"},
		{"redis with a reference", []string{"--self", "--scenario", "standing-room", "--redis", "127.0.0.1:6379", "--reference"}, "--reference: a static server has no store: not with --redis"},
		{"standing room's nodes without redis", []string{"--self", "--scenario", "standing-room", "--nodes", "3"}, "--nodes: several nodes share a store: give --redis ADDR"},
		{"standing room's nodes", []string{"--self", "--scenario", "standing-room", "--redis", "127.0.0.1:6379", "--nodes", "17"}, "--nodes: 17: from 1 to 16"},
		{"standing room's shards without redis", []string{"--self", "--scenario", "standing-room", "--shards", "3"}, "--shards: the embedded store is one process and ignores a room's shards: give --redis ADDR"},
		{"standing room's shards", []string{"--self", "--scenario", "standing-room", "--redis", "127.0.0.1:6379", "--shards", "17"}, "--shards: 17: a room's shards are from 1 to 16"},
		{"shards with flash-crowd", []string{"--self", "--shards", "3"}, "--shards: --scenario flash-crowd does not use it"},
		{"standing room's redis addresses", []string{"--self", "--scenario", "standing-room", "--redis", "a:1,b:2"}, "--redis: several addresses need --redis-cluster"},
		{"targets", []string{"--self", "--scenario", "throughput", "--targets", "admitted,usher"}, "--targets: unknown target \"usher\" (origin, proxy-tuned, proxy-unpooled, admitted, new, checkin, nginx-proxy, nginx-usher)"},
		{"targets elsewhere", []string{"--self", "--scenario", "standing-room", "--targets", "admitted"}, "--targets: --scenario standing-room does not use it"},
		{"external with redis", []string{"--self", "--scenario", "throughput", "--external", "--redis", "127.0.0.1:6379"}, "--external: measures usher in a process of its own, on the embedded store: not with --redis"},
		{"external under a second", []string{"--self", "--scenario", "throughput", "--external", "--duration", "300ms"}, "--duration: 300ms: --external loads whole seconds (wrk), at least 1s"},
		{"external elsewhere", []string{"--self", "--scenario", "flash-crowd", "--external"}, "--external: --scenario flash-crowd does not use it"},
		{"reference elsewhere", []string{"--self", "--scenario", "throughput", "--reference"}, "--reference: --scenario throughput does not use it"},
		{"redis cluster alone", []string{"--self", "--scenario", "throughput", "--redis-cluster"}, "--redis: --redis-cluster and --compare-embedded need --redis ADDR"},
		{"redis addresses", []string{"--self", "--scenario", "throughput", "--redis", "a:1,b:2"}, "--redis: several addresses need --redis-cluster"},
		{"bound", []string{"--self", "--scenario", "standing-room", "--bound", "0s"}, "--bound: 0s: must be above zero"},
		{"max-waiters", []string{"--self", "--scenario", "standing-room", "--max-waiters", "10"}, "--max-waiters: 10: at least 1000"},
		{"max-refresh below refresh", []string{"--self", "--scenario", "standing-room", "--refresh", "30s", "--max-refresh", "20s"}, "--max-refresh: 20s: a room's max_refresh_interval is from its refresh_interval (30s) to 5m0s"},
		{"steps not rising", []string{"--self", "--scenario", "standing-room", "--steps", "1000,500"}, "--steps: 500 after 1000: the steps must rise"},
		{"steps not a number", []string{"--self", "--scenario", "standing-room", "--steps", "1000,x"}, "--steps: \"x\" is not a number of waiters"},
		{"max-refresh with flash-crowd", []string{"--self", "--max-refresh", "1m"}, "--max-refresh: --scenario flash-crowd does not use it"},
		{"rounds with standing-room", []string{"--self", "--scenario", "standing-room", "--rounds", "2"}, "--rounds: --scenario standing-room does not use it"},
		{"case", []string{"--self", "--scenario", "autopilot", "--case", "middle"}, `--case: "middle": high, low or both`},
		{"case with flash-crowd", []string{"--self", "--case", "high"}, "--case: --scenario flash-crowd does not use it"},
		{"origin", []string{"--self", "--scenario", "autopilot", "--origin", "10,80ms"}, "--origin: want WORKERS,SERVICE,TIMEOUT"},
		{"origin workers", []string{"--self", "--scenario", "autopilot", "--origin", "0,80ms,1s"}, `--origin: workers "0"`},
		{"origin service", []string{"--self", "--scenario", "autopilot", "--origin", "10,soon,1s"}, "--origin: service time: "},
		{"origin timeout", []string{"--self", "--scenario", "autopilot", "--origin", "10,80ms,-1s"}, `--origin: timeout "-1s"`},
		{"horizon", []string{"--self", "--scenario", "autopilot", "--horizon", "5s"}, "--horizon: 5s: from 10s to 1h"},
		{"total with autopilot", []string{"--self", "--scenario", "autopilot", "--total", "10"}, "--total: --scenario autopilot does not use it"},
		{"target with autopilot", []string{"--target", "http://x/", "--scenario", "autopilot"}, "--target: --scenario autopilot does not use it"},
		{"autopilot arrivals", []string{"--self", "--scenario", "autopilot", "--arrivals", "flash:x@1s"}, "--arrivals: "},
		{"autopilot plot folder", []string{"--self", "--scenario", "autopilot", "--plot", missing}, "--plot: cannot write " + missing},
		{"autopilot refresh", []string{"--self", "--scenario", "autopilot", "--refresh", "0s"}, "--refresh: 0s: a room's refresh_interval"},
		{"not a number", []string{"--self", "--total", "many"}, `invalid value "many" for flag -total`},
		{"stray argument", []string{"--self", "now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runMain(t, append([]string{"bench"}, tt.args...)...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, out, errs, tt.want)
			}
		})
	}

	t.Run("every problem at once", func(t *testing.T) {
		_, _, errs := runMain(t, "bench", "--self", "--total", "0", "--session", "1s", "--abandon", "2")
		for _, want := range []string{"--total: ", "--session: ", "--abandon: "} {
			if !strings.Contains(errs, "usher bench: "+want) {
				t.Errorf("stderr lacks %q:\n%s", want, errs)
			}
		}
	})
}

// TestBenchFlashSummary runs a flash crowd that never fills its room: the
// text starts with the summary, warns that nobody waited, and keeps the
// figures; the JSON keeps its fields and gains the new ones.
func TestBenchFlashSummary(t *testing.T) {
	args := []string{"bench", "--self", "--arrivals", "steady:5@500ms", "--total", "50", "--browse", "200ms", "--every", "100ms", "--abandon", "0"}
	code, out, errs := runMain(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Flash crowd steady:5@500ms into a room of 50 active, 3,000 a minute, 10s sessions, 2s refresh.\n5 visitors over ",
		": 5 admitted.\n",
		"Limits: at most 5 active of 50, at most 5 admitted in 60 s of 3,000 (the limits held).\nQueue: nobody waited.\n",
		"\nscenario                     \"flash-crowd\"\n",
		"max_active_ratio ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasPrefix(out, "Flash crowd ") {
		t.Errorf("output does not start with the summary:\n%s", out)
	}
	if !strings.Contains(errs, "usher bench: warning: nobody waited: the room never filled, so utilisation and waits measure nothing; raise the arrivals or lower the limits\n") {
		t.Errorf("stderr lacks the warning:\n%s", errs)
	}

	code, out, _ = runMain(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("--json exit %d", code)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json: %v: %s", err, out)
	}
	for _, key := range []string{"scenario", "arrivals", "limits", "visitors", "admitted", "max_active", "max_active_ratio",
		"max_rate", "utilization", "wait_p50_s", "eta_error_median_s", "requeued_while_browsing",
		"wait_p90_s", "queue_peak", "queue_drained", "warnings"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON lacks %q", key)
		}
	}
}
