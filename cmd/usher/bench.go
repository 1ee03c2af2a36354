package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
)

// benchFlags are usher bench's options.
type benchFlags struct {
	scenario string
	self     bool
	target   string
	jsonOut  bool
	plot     string
	seed     uint64

	// flash-crowd
	arrivals  string
	browse    string
	every     string
	abandon   float64
	patience  string
	total     int
	perMinute int
	session   time.Duration
	refresh   time.Duration

	// throughput
	rounds   int
	duration time.Duration
	workers  int
	// redis, when set, runs the self environment's usher on the Redis
	// store at this address (seed nodes, comma-separated, with
	// redisCluster) instead of the embedded one.
	redis        string
	redisCluster bool
	// compareEmbedded also measures a usher on the embedded store, with
	// redis.
	compareEmbedded bool
	// nodes is how many usher nodes share the Redis store (flash-crowd).
	nodes int
	// clockSlack is the nodes' store.redis.clock_slack (flash-crowd).
	clockSlack time.Duration
	// targets, when not empty, are the only targets loaded (names as in
	// throughputTargets), for profiling one path.
	targets []string
	// external loads the throughput targets from a process of their own
	// (wrk, else the Go generator), pinned apart from the servers.
	external bool

	// standing-room
	bound      time.Duration
	maxWaiters int
	maxRefresh time.Duration
	stepsFlag  string
	steps      []int
	reference  bool

	// autopilot
	apCase     string
	apAtOnce   bool
	originSpec string
	horizon    time.Duration
	origin     bench.OriginModel

	// arr and model are flash-crowd's (and autopilot's) arrivals and
	// visitors, parsed.
	arr   bench.Arrivals
	model bench.VisitorModel
}

func (m *Main) bench(ctx context.Context, args []string) error {
	f, err := m.parseBenchFlags(args)
	if err != nil {
		return err
	}
	var out any
	switch f.scenario {
	case "flash-crowd":
		out, err = m.benchFlash(ctx, f)
	case "throughput":
		out, err = m.benchThroughput(ctx, f)
	case "standing-room":
		out, err = m.benchStanding(ctx, f)
	case "autopilot":
		var r *AutopilotBenchResult
		if r, err = m.benchAutopilot(ctx, f); err != nil {
			return err
		}
		if f.jsonOut {
			return writeJSON(m, r)
		}
		return writeAutopilotSummary(m.Stdout, r)
	}
	if err != nil {
		return err
	}
	for _, w := range benchWarnings(out) {
		fmt.Fprintf(m.Stderr, "usher bench: warning: %s\n", w)
	}
	if f.jsonOut {
		return writeJSON(m, out)
	}
	writeBenchSummary(m.Stdout, out)
	fmt.Fprintln(m.Stdout)
	printTable(m.Stdout, out)
	return nil
}

// benchScenarioFlags are the flags each scenario reads, besides
// --scenario, --self and --json; setting another is a mistake.
var benchScenarioFlags = map[string][]string{
	"flash-crowd": {"target", "plot", "seed", "arrivals", "browse", "every", "abandon", "patience",
		"total", "per-minute", "session", "refresh", "redis", "redis-cluster", "nodes", "clock-slack"},
	"throughput":    {"rounds", "duration", "workers", "redis", "redis-cluster", "compare-embedded", "targets", "external"},
	"standing-room": {"refresh", "bound", "max-waiters", "max-refresh", "steps", "reference"},
	"autopilot": {"plot", "seed", "arrivals", "browse", "every", "abandon", "patience", "refresh",
		"case", "origin", "horizon", "sides-at-once"},
}

// The bounds a room's config puts on its settings (internal/config), which
// the flags describing a bench room keep.
const (
	minSession = 10 * time.Second
	minRefresh = time.Second
	maxRefresh = 5 * time.Minute
)

// parseBenchFlags parses usher bench's command line and checks every value
// and that the flags go together; each problem is a line on stderr naming
// the flag and the reason, and the error is errUsage (exit code 2).
func (m *Main) parseBenchFlags(args []string) (*benchFlags, error) {
	fs := m.flags("bench", "bench --self --scenario flash-crowd|throughput|standing-room|autopilot [flags]")
	var f benchFlags
	fs.StringVar(&f.scenario, "scenario", "flash-crowd", "flash-crowd, throughput, standing-room or autopilot")
	fs.BoolVar(&f.self, "self", false, "start usher, a sample origin and (throughput) reference reverse proxies on this machine")
	fs.StringVar(&f.target, "target", "", "flash-crowd against a running usher: the URL of the room (with --total etc. describing it)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the result as JSON")
	fs.StringVar(&f.plot, "plot", "", "flash-crowd: write an SVG plot to this file; autopilot: one a case, the case's name before the extension (autopilot.svg: autopilot-high.svg)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of arrivals and visitor behaviour")
	fs.StringVar(&f.arrivals, "arrivals", "flash:5000@30s", "arrival curve: flash:N@D, steady:R/s@D, ramp:N@D, csv:FILE")
	fs.StringVar(&f.browse, "browse", "2s-8s", "how long an admitted visitor stays")
	fs.StringVar(&f.every, "every", "1s-3s", "pause between an admitted visitor's requests")
	fs.Float64Var(&f.abandon, "abandon", 0.2, "share of visitors who give up waiting, from 0 to 1")
	fs.StringVar(&f.patience, "patience", "5s-60s", "how long those who give up wait")
	fs.IntVar(&f.total, "total", 1000, "the room's total_active_users")
	fs.IntVar(&f.perMinute, "per-minute", 3000, "the room's new_users_per_minute")
	fs.DurationVar(&f.session, "session", 10*time.Second, "the room's session_duration (at least 10s)")
	fs.DurationVar(&f.refresh, "refresh", 2*time.Second, "the room's refresh_interval (1s to 5m)")
	fs.IntVar(&f.rounds, "rounds", 3, "throughput: rounds (each measures every target once, interleaved)")
	fs.DurationVar(&f.duration, "duration", 3*time.Second, "throughput: how long each target is loaded per round")
	fs.IntVar(&f.workers, "workers", 32, "throughput: requests in flight")
	fs.StringVar(&f.redis, "redis", "", "throughput, flash-crowd: run usher on the Redis store at this address (host:port; seed nodes, comma-separated, with --redis-cluster)")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "throughput, flash-crowd: --redis is a Redis Cluster")
	fs.IntVar(&f.nodes, "nodes", 1, "flash-crowd: usher nodes sharing the --redis store; visitors' requests go to each in turn")
	fs.DurationVar(&f.clockSlack, "clock-slack", config.DefaultClockSlack, "flash-crowd: with --redis, the nodes' store.redis.clock_slack (whole milliseconds; 0s: they share this machine's clock)")
	fs.BoolVar(&f.compareEmbedded, "compare-embedded", false, "throughput: with --redis, also measure usher on the embedded store")
	fs.BoolVar(&f.external, "external", false, "throughput: load from outside, as operators measure: wrk (else a Go generator) in a process of its own pinned to the first CPU, every server (origin, proxies, usher, nginx) pinned to the last")
	targets := fs.String("targets", "", "throughput: load only these targets, comma-separated ("+strings.Join(throughputTargets, ", ")+"), e.g. to profile one path")
	fs.DurationVar(&f.bound, "bound", 50*time.Millisecond, "standing-room: the check-in p99 latency bound")
	fs.IntVar(&f.maxWaiters, "max-waiters", 100000, "standing-room: the most waiters to try (at least 1000)")
	fs.StringVar(&f.stepsFlag, "steps", "", "standing-room: the numbers of waiters to try, comma-separated and rising (default 1000,10000,100000,250000,500000,1000000 up to --max-waiters)")
	fs.DurationVar(&f.maxRefresh, "max-refresh", 2*time.Minute, "standing-room: the room's max_refresh_interval (--refresh to 5m)")
	fs.BoolVar(&f.reference, "reference", false, "standing-room: a static server in usher's place, giving the same intervals: what the machine and the generator cost alone")
	fs.StringVar(&f.apCase, "case", "high", "autopilot: the room's limits 3x too high or too low for the origin: high, low or both")
	fs.BoolVar(&f.apAtOnce, "sides-at-once", false, "autopilot: run a case's two sides (fixed limits, autopilot) at once, each under the other's load, in half the time")
	fs.StringVar(&f.originSpec, "origin", autopilotOrigin, "autopilot: the origin in this process: WORKERS,SERVICE,TIMEOUT (a request that waits TIMEOUT for a worker gets 504)")
	fs.DurationVar(&f.horizon, "horizon", autopilotHorizon, "autopilot: stop each run this long after its start, whoever is still there")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	var bad []string
	problem := func(flag, format string, args ...any) {
		bad = append(bad, "--"+flag+": "+fmt.Sprintf(format, args...))
	}
	uses, known := benchScenarioFlags[f.scenario]
	if !known {
		problem("scenario", "unknown scenario %q (flash-crowd, throughput, standing-room, autopilot)", f.scenario)
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if f.scenario == "autopilot" {
		// The scenario's own defaults, sized for its origin.
		for name, v := range map[string]*string{"arrivals": &f.arrivals, "browse": &f.browse, "every": &f.every} {
			if !set[name] {
				*v = map[string]string{"arrivals": autopilotArrivals, "browse": autopilotBrowse, "every": autopilotEvery}[name]
			}
		}
		if !set["abandon"] {
			f.abandon = 0
		}
	}
	if known {
		for _, name := range slices.Sorted(maps.Keys(set)) {
			if name != "scenario" && name != "self" && name != "json" && !slices.Contains(uses, name) {
				problem(name, "--scenario %s does not use it", f.scenario)
			}
		}
	}
	switch {
	case f.self && f.target != "":
		problem("target", "with --self, usher runs in this process; give one or the other")
	case !f.self && f.target == "":
		problem("self", "needed, except for --scenario flash-crowd with --target URL")
	}
	if f.target != "" {
		if u, err := url.Parse(f.target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problem("target", "%q is not an http:// or https:// URL", f.target)
		}
	}
	if f.scenario == "flash-crowd" || f.scenario == "autopilot" {
		var err error
		if f.arr, err = bench.ParseArrivals(f.arrivals); err != nil {
			problem("arrivals", "%v", err)
		}
		for _, d := range []struct {
			flag, s string
			dst     *bench.Dist
		}{{"browse", f.browse, &f.model.Browse}, {"every", f.every, &f.model.RequestEvery}, {"patience", f.patience, &f.model.Patience}} {
			if *d.dst, err = bench.ParseDist(d.s); err != nil {
				problem(d.flag, "%v", err)
			}
		}
		f.model.AbandonFraction = f.abandon
		if !(f.abandon >= 0 && f.abandon <= 1) {
			problem("abandon", "%v is not a share from 0 to 1", f.abandon)
		}
		if f.scenario == "flash-crowd" && f.total < 1 {
			problem("total", "%d: a room lets at least 1 visitor in", f.total)
		}
		if f.scenario == "flash-crowd" && f.perMinute < 1 {
			problem("per-minute", "%d: a room lets at least 1 visitor in a minute", f.perMinute)
		}
		if f.scenario == "flash-crowd" && f.session < minSession {
			problem("session", "%v: a room's session_duration is at least %v", f.session, minSession)
		}
		if f.plot != "" {
			if st, err := os.Stat(filepath.Dir(f.plot)); err != nil || !st.IsDir() {
				problem("plot", "cannot write %s: no folder %s", f.plot, filepath.Dir(f.plot))
			}
		}
		switch {
		case f.nodes < 1 || f.nodes > 16:
			problem("nodes", "%d: from 1 to 16", f.nodes)
		case f.nodes > 1 && f.redis == "":
			problem("nodes", "several nodes share a store: give --redis ADDR")
		case f.redis != "" && !f.self:
			problem("redis", "needs --self (usher runs in this process)")
		}
		switch cs := f.clockSlack; {
		case set["clock-slack"] && f.redis == "":
			problem("clock-slack", "nodes on the embedded store count sessions exactly: give --redis ADDR")
		case cs < 0 || cs > config.MaxClockSlack || cs%time.Millisecond != 0:
			problem("clock-slack", "%v: whole milliseconds from 0s to %v", cs, config.MaxClockSlack)
		}
	}
	if f.scenario == "autopilot" {
		switch f.apCase {
		case "high", "low", "both":
		default:
			problem("case", "%q: high, low or both", f.apCase)
		}
		var err error
		if f.origin, err = parseOrigin(f.originSpec); err != nil {
			problem("origin", "%v", err)
		} else if f.origin.Workers > 10000 {
			problem("origin", "%d workers: at most 10000 in the bench process", f.origin.Workers)
		}
		if f.horizon < 10*time.Second || f.horizon > time.Hour {
			problem("horizon", "%v: from 10s to 1h", f.horizon)
		}
		if f.model.Browse.Mean() <= 0 {
			problem("browse", "%s: the visitors must browse for a while (a mean above zero)", f.browse)
		}
		if f.model.RequestEvery.Mean() <= 0 {
			problem("every", "%s: the pause between requests must have a mean above zero", f.every)
		}
	}
	if f.scenario != "throughput" && (f.refresh < minRefresh || f.refresh > maxRefresh) {
		problem("refresh", "%v: a room's refresh_interval is from %v to %v", f.refresh, minRefresh, maxRefresh)
	}
	if f.scenario == "throughput" || f.scenario == "flash-crowd" {
		switch {
		case f.redis == "" && (f.redisCluster || f.compareEmbedded):
			problem("redis", "--redis-cluster and --compare-embedded need --redis ADDR")
		case f.redis != "" && !f.redisCluster && strings.Contains(f.redis, ","):
			problem("redis", "several addresses need --redis-cluster")
		}
	}
	if f.scenario == "throughput" {
		if f.rounds < 1 {
			problem("rounds", "%d: at least 1", f.rounds)
		}
		if f.duration <= 0 {
			problem("duration", "%v: must be above zero", f.duration)
		}
		if f.workers < 1 {
			problem("workers", "%d: at least 1", f.workers)
		}
		if f.external && f.redis != "" {
			problem("external", "measures usher in a process of its own, on the embedded store: not with --redis")
		}
		if f.external && f.duration < time.Second {
			problem("duration", "%v: --external loads whole seconds (wrk), at least 1s", f.duration)
		}
		if *targets != "" {
			for t := range strings.SplitSeq(*targets, ",") {
				if !slices.Contains(throughputTargets, t) {
					problem("targets", "unknown target %q (%s)", t, strings.Join(throughputTargets, ", "))
				}
				f.targets = append(f.targets, t)
			}
		}
	}
	if f.scenario == "standing-room" {
		if f.bound <= 0 {
			problem("bound", "%v: must be above zero", f.bound)
		}
		if f.maxWaiters < 1000 {
			problem("max-waiters", "%d: at least 1000, the first step", f.maxWaiters)
		}
		f.steps = nil
		for _, n := range standingSteps {
			if n <= f.maxWaiters {
				f.steps = append(f.steps, n)
			}
		}
		if set["steps"] {
			f.steps = nil
			for _, part := range strings.Split(f.stepsFlag, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(part))
				switch {
				case err != nil || n < 1:
					problem("steps", "%q is not a number of waiters", part)
				case len(f.steps) > 0 && n <= f.steps[len(f.steps)-1]:
					problem("steps", "%d after %d: the steps must rise", n, f.steps[len(f.steps)-1])
				case n > 10_000_000:
					problem("steps", "%d: at most 10,000,000", n)
				default:
					f.steps = append(f.steps, n)
				}
			}
		}
		if !set["max-refresh"] {
			f.maxRefresh = max(f.maxRefresh, f.refresh) // the room's default
		}
		if f.maxRefresh < f.refresh || f.maxRefresh > maxRefresh {
			problem("max-refresh", "%v: a room's max_refresh_interval is from its refresh_interval (%v) to %v", f.maxRefresh, f.refresh, maxRefresh)
		}
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(m.Stderr, "usher bench: %s\n", b)
		}
		return nil, errUsage
	}
	return &f, nil
}

func writeJSON(m *Main, v any) error {
	enc := json.NewEncoder(m.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// printTable prints a result's JSON fields as an aligned table.
func printTable(w io.Writer, v any) {
	b, _ := json.Marshal(v)
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(b, &fields)
	// Keep the struct's order.
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.Token()
	for dec.More() {
		k, _ := dec.Token()
		var raw json.RawMessage
		_ = dec.Decode(&raw)
		fmt.Fprintf(w, "%-28s %s\n", k, raw)
	}
}

// writePlot writes the flash crowd's plot.
func writePlot(path string, tl *bench.Timeline, lim bench.Limits, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := bench.SimSummary(tl, lim, time.Second)
	if err := bench.PlotSVG(f, sum.Series, lim, sum.Waits, title); err != nil {
		return err
	}
	return f.Close()
}
