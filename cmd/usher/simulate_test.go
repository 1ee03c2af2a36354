package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/bench"
)

const simulateConfig = `listen: 127.0.0.1:8080
store:
  embedded:
    path: ./usher-data
rooms:
  - id: sale
    origin: http://127.0.0.1:3000
    routes:
      - path: /
    total_active_users: 50
    new_users_per_minute: 600
    session_duration: 1m
    refresh_interval: 10s
    json_response_enabled: true
  - id: other
    origin: http://127.0.0.1:3000
    cookie_suffix: other
    routes:
      - path: /other
    total_active_users: 50
    new_users_per_minute: 600
    session_duration: 1m
`

// TestSimulateBadFlags: every bad value is refused before anything runs,
// with exit code 2 and a line naming the flag.
func TestSimulateBadFlags(t *testing.T) {
	cfg := writeConfig(t, simulateConfig)
	missing := filepath.Join(t.TempDir(), "no", "plot.svg")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"arrivals", []string{"--arrivals", "flash:10"}, `--arrivals: arrivals "flash:10": missing @D`},
		{"browse", []string{"--browse", "soon"}, "--browse: "},
		{"every", []string{"--every", "1s-"}, "--every: "},
		{"abandon share", []string{"--abandon", "120%@5m"}, `--abandon: share "120%" is not a percentage from 0% to 100%`},
		{"abandon form", []string{"--abandon", "20%"}, "--abandon: want PERCENT@DURATION"},
		{"abandon dist", []string{"--abandon", "20%@later"}, "--abandon: "},
		{"horizon", []string{"--horizon", "0s"}, "--horizon: 0s: must be above zero"},
		{"negative horizon", []string{"--horizon", "-1h"}, "--horizon: -1h0m0s: must be above zero"},
		{"plot folder", []string{"--plot", missing}, "--plot: cannot write " + missing},
		{"no room named", nil, "--room: the config has 2 rooms (sale, other); name one"},
		{"unknown room", []string{"--room", "drop"}, `--room: no room "drop" in the config (it has sale, other)`},
		{"aggregate", []string{"--aggregate", "maybe"}, `--aggregate: "maybe": want on, off or auto`},
		{"aggregate with origin", []string{"--aggregate", "on", "--origin", "20,80ms-120ms,5s"}, "--aggregate: on: a simulated origin (--origin)"},
		{"prior word", []string{"--prior", "learn"}, `--prior: "learn": want off, auto or a factor above zero`},
		{"prior zero", []string{"--prior", "0"}, `--prior: "0": want off, auto or a factor above zero (not a positive number)`},
		{"prior NaN", []string{"--prior", "NaN"}, `--prior: "NaN": want off, auto or a factor above zero (not a positive number)`},
		{"prior with compare", []string{"--prior", "auto", "--compare", "--origin", "20,80ms-120ms,5s"}, "--prior: not with --compare"},
		{"nodes", []string{"--nodes", "0"}, "--nodes: 0: want 1 to 10000"},
		{"shards", []string{"--shards", "65"}, "--shards: 65: want 1 to 64"},
		{"script cost", []string{"--script-cost", "0s"}, "--script-cost: 0s: must be above zero"},
		{"move cost", []string{"--move-cost", "-1us"}, "--move-cost: -1µs: must not be negative"},
		{"load with compare", []string{"--nodes", "3", "--compare", "--origin", "20,80ms-120ms,5s"}, "--nodes: the load model (--nodes, --shards, --script-cost, --move-cost) is not with --compare"},
		{"cpuprofile folder", []string{"--cpuprofile", missing}, "--cpuprofile: cannot write " + missing},
		{"not a duration", []string{"--room", "sale", "--horizon", "tomorrow"}, `invalid value "tomorrow" for flag -horizon`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"simulate", "--config", cfg}, tt.args...)
			if !strings.Contains(strings.Join(tt.args, " "), "--room") && tt.name != "no room named" {
				args = append(args, "--room", "sale")
			}
			code, out, errs := runMain(t, args...)
			if code != 2 || out != "" || !strings.Contains(errs, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", code, out, errs, tt.want)
			}
		})
	}
	t.Run("no config file", func(t *testing.T) {
		code, _, errs := runMain(t, "simulate", "--config", filepath.Join(t.TempDir(), "nope.yaml"))
		if code != 2 || !strings.Contains(errs, "usher simulate: --config: ") {
			t.Errorf("exit %d, stderr %s", code, errs)
		}
	})
}

// TestSimulateSummary: the text starts with the summary, then the
// figures; the JSON keeps its fields and gains the new ones; a run that
// never fills the room warns.
func TestSimulateSummary(t *testing.T) {
	cfg := writeConfig(t, simulateConfig)
	args := []string{"simulate", "--config", cfg, "--room", "sale", "--arrivals", "flash:300@30s", "--browse", "2m", "--every", "30s", "--abandon", "0%@1m"}
	code, out, errs := runMain(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"Simulated room sale (flash:300@30s, seed 1): ",
		"\n300 visitors over ",
		": 300 admitted.\nThe room was bound by concurrency: at most 50 active of 50, ",
		"(the limits held).\nQueue: peaked at ",
		"\nWait: median ",
		"\n\nscenario                     \"simulate\"\n",
		"\nmax_waiting ", "\nwaits_by_arrival_minute ", "\nqueue_peak ", "\nbound_by                     \"concurrency\"\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr: %s", errs)
	}

	code, out, _ = runMain(t, append(args, "--json")...)
	if code != 0 {
		t.Fatal("--json failed")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"scenario", "room", "arrivals", "seed", "elapsed_s", "max_waiting", "drained", "drained_s",
		"visitors", "admitted", "max_active_ratio", "wait_p50_s", "waits_by_arrival_minute", "wait_p90_s", "queue_peak", "bound_by"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("JSON lacks %q", key)
		}
	}

	if doc["mode"] != "one-by-one" {
		t.Errorf("mode %v, want one-by-one below %d visitors", doc["mode"], aggregateFrom)
	}

	code, _, errs = runMain(t, "simulate", "--config", cfg, "--room", "sale", "--arrivals", "flash:10@30s")
	if code != 0 || !strings.Contains(errs, "usher simulate: warning: nobody waited: ") {
		t.Errorf("exit %d, stderr %s; want the warning that nobody waited", code, errs)
	}
}

// TestSimulateAggregateFlag: --aggregate on gives the figures of the
// one-by-one run, says so in its mode, and counts what it parked.
func TestSimulateAggregateFlag(t *testing.T) {
	cfg := writeConfig(t, simulateConfig)
	args := []string{"simulate", "--config", cfg, "--room", "sale", "--arrivals", "flash:3000@30s", "--json"}
	docs := map[string]map[string]any{}
	for _, mode := range []string{"off", "on"} {
		code, out, errs := runMain(t, append(args, "--aggregate", mode)...)
		if code != 0 {
			t.Fatalf("--aggregate %s: exit %d: %s", mode, code, errs)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		docs[mode] = doc
	}
	on, off := docs["on"], docs["off"]
	if on["mode"] != "aggregate" || off["mode"] != "one-by-one" || off["aggregate"] != nil {
		t.Fatalf("modes %v and %v, aggregate %v", on["mode"], off["mode"], off["aggregate"])
	}
	agg, _ := on["aggregate"].(map[string]any)
	if n, _ := agg["skipped_check_ins"].(float64); n == 0 {
		t.Errorf("nothing parked: %v", agg)
	}
	for _, k := range []string{"elapsed_s", "mode", "aggregate"} {
		delete(on, k)
		delete(off, k)
	}
	a, _ := json.Marshal(on)
	b, _ := json.Marshal(off)
	if string(a) != string(b) {
		t.Errorf("figures differ:\naggregate  %s\none by one %s", a, b)
	}
}

// TestSimulateLoadFlags: --nodes and --shards add the Redis load model's
// figures to the text and the JSON, a front and back shards with
// --shards 3; without them there are none.
func TestSimulateLoadFlags(t *testing.T) {
	cfg := writeConfig(t, simulateConfig)
	args := []string{"simulate", "--config", cfg, "--room", "sale", "--arrivals", "flash:2000@30s", "--abandon", "0%@1m"}
	code, out, errs := runMain(t, append(args, "--nodes", "3", "--shards", "3")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"\nRedis load on 3 node(s) and 3 shard(s) (a script call 63 us, a batched move 6.5 us more), over ",
		"\n  per check-in ", "\n  shard 0 (front): ", "\n  shard 2 (back): "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errs = runMain(t, append(args, "--json", "--shards", "2", "--script-cost", "50us")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var doc struct {
		Visitors int              `json:"visitors"`
		Load     *bench.LoadStats `json:"load"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	l := doc.Load
	if l == nil || l.Nodes != 1 || l.Shards != 2 || l.ScriptCostUS != 50 || l.MoveCostUS != 6.5 || len(l.ByShard) != 2 ||
		l.NewVisitors+l.FarBackNew != int64(doc.Visitors) || l.CheckIns == 0 {
		t.Errorf("load %+v", l)
	}
	code, out, _ = runMain(t, append(args, "--json")...)
	if code != 0 || strings.Contains(out, `"load"`) {
		t.Errorf("exit %d; without the flags the JSON has a load: %s", code, out)
	}
}

// TestSimulateCPUProfile: --cpuprofile writes a profile of the run.
func TestSimulateCPUProfile(t *testing.T) {
	cfg := writeConfig(t, simulateConfig)
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, _, errs := runMain(t, "simulate", "--config", cfg, "--room", "sale", "--arrivals", "flash:500@10s", "--cpuprofile", prof)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Errorf("no profile: %v", err)
	}
}
