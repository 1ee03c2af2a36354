package selfbench

import (
	"fmt"
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

// Config is usher bench's command line: each field is the flag of its
// name (Scenario is --scenario, PerMinute --per-minute, ...), as given.
// Check checks it and fills in what the scenarios read parsed.
type Config struct {
	Scenario string
	Self     bool
	Target   string
	JSON     bool
	Plot     string
	Seed     uint64

	// flash-crowd (and autopilot)
	Arrivals  string
	Browse    string
	Every     string
	Abandon   float64
	Patience  string
	Total     int
	PerMinute int
	Session   time.Duration
	Refresh   time.Duration

	// throughput
	Rounds   int
	Duration time.Duration
	Workers  int
	// Redis, when set, runs the self environment's usher on the Redis
	// store at this address (seed nodes, comma-separated, with
	// RedisCluster) instead of the embedded one.
	Redis        string
	RedisCluster bool
	// CompareEmbedded also measures a usher on the embedded store, with
	// Redis.
	CompareEmbedded bool
	// Nodes is how many usher nodes share the Redis store (flash-crowd,
	// standing-room).
	Nodes int
	// ClockSlack is the nodes' store.redis.clock_slack (flash-crowd).
	ClockSlack time.Duration
	// Targets, when not empty, are the only targets loaded, comma-separated
	// (names as in ThroughputTargets), for profiling one path.
	Targets string
	// External loads the throughput targets from a process of their own
	// (wrk, else the Go generator), pinned apart from the servers.
	External bool

	// standing-room
	Bound      time.Duration
	MaxWaiters int
	MaxRefresh time.Duration
	// Steps are the numbers of waiters to try, comma-separated; empty: the
	// default steps up to MaxWaiters.
	Steps     string
	Reference bool
	// Shards is the room's shards (rooms[].shards; 0 is 1): with Redis,
	// its line spread over a front and Shards-1 back shards.
	Shards int

	// autopilot
	Case        string
	SidesAtOnce bool
	// Origin is --origin parsed (WORKERS,SERVICE,TIMEOUT), by the caller:
	// usher simulate reads the same flag.
	Origin  bench.OriginModel
	Horizon time.Duration

	// What Check parses: flash-crowd's (and autopilot's) arrivals and
	// visitors, the throughput targets, the standing room's steps.
	arr     bench.Arrivals
	model   bench.VisitorModel
	targets []string
	steps   []int
}

// scenarios are usher bench's scenarios (--scenario).
const scenarios = "flash-crowd, throughput, standing-room, autopilot"

// scenarioFlags are the flags each scenario reads, besides --scenario,
// --self and --json; setting another is a mistake.
func scenarioFlags(scenario string) ([]string, bool) {
	uses, ok := map[string][]string{
		"flash-crowd": {"target", "plot", "seed", "arrivals", "browse", "every", "abandon", "patience",
			"total", "per-minute", "session", "refresh", "redis", "redis-cluster", "nodes", "clock-slack"},
		"throughput":    {"rounds", "duration", "workers", "redis", "redis-cluster", "compare-embedded", "targets", "external"},
		"standing-room": {"refresh", "bound", "max-waiters", "max-refresh", "steps", "reference", "redis", "redis-cluster", "nodes", "shards"},
		"autopilot": {"plot", "seed", "arrivals", "browse", "every", "abandon", "patience", "refresh",
			"case", "origin", "horizon", "sides-at-once"},
	}[scenario]
	return uses, ok
}

// The bounds a room's config puts on its settings (internal/config), which
// the flags describing a bench room keep.
const (
	minSession = 10 * time.Second
	minRefresh = time.Second
	maxRefresh = 5 * time.Minute
)

// Check checks every value and that the flags go together, set being the
// names of the flags given on the command line (without their dashes).
// Each problem is a line naming the flag and the reason ("--total: 0: a
// room lets at least 1 visitor in"); none: c is ready to run. It also fills
// in what follows from the flags: the autopilot scenario's own defaults
// where its flags are not set, and the values the scenarios read parsed.
func (c *Config) Check(set map[string]bool) []string {
	var bad []string
	problem := func(flag, format string, args ...any) {
		bad = append(bad, "--"+flag+": "+fmt.Sprintf(format, args...))
	}
	uses, known := scenarioFlags(c.Scenario)
	if !known {
		problem("scenario", "unknown scenario %q (%s)", c.Scenario, scenarios)
	}
	if c.Scenario == "autopilot" {
		// The scenario's own defaults, sized for its origin.
		for name, v := range map[string]*string{"arrivals": &c.Arrivals, "browse": &c.Browse, "every": &c.Every} {
			if !set[name] {
				*v = map[string]string{"arrivals": autopilotArrivals, "browse": autopilotBrowse, "every": autopilotEvery}[name]
			}
		}
		if !set["abandon"] {
			c.Abandon = 0
		}
	}
	if known {
		for _, name := range slices.Sorted(maps.Keys(set)) {
			if name != "scenario" && name != "self" && name != "json" && !slices.Contains(uses, name) {
				problem(name, "--scenario %s does not use it", c.Scenario)
			}
		}
	}
	switch {
	case c.Self && c.Target != "":
		problem("target", "with --self, usher runs in this process; give one or the other")
	case !c.Self && c.Target == "":
		problem("self", "needed, except for --scenario flash-crowd with --target URL")
	}
	if c.Target != "" {
		if u, err := url.Parse(c.Target); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			problem("target", "%q is not an http:// or https:// URL", c.Target)
		}
	}
	if c.Scenario == "flash-crowd" || c.Scenario == "autopilot" {
		c.checkCrowd(set, problem)
	}
	if c.Scenario == "autopilot" {
		switch c.Case {
		case "high", "low", "both":
		default:
			problem("case", "%q: high, low or both", c.Case)
		}
		if c.Origin.Workers > 10000 {
			problem("origin", "%d workers: at most 10000 in the bench process", c.Origin.Workers)
		}
		if c.Horizon < 10*time.Second || c.Horizon > time.Hour {
			problem("horizon", "%v: from 10s to 1h", c.Horizon)
		}
		if c.model.Browse.Mean() <= 0 {
			problem("browse", "%s: the visitors must browse for a while (a mean above zero)", c.Browse)
		}
		if c.model.RequestEvery.Mean() <= 0 {
			problem("every", "%s: the pause between requests must have a mean above zero", c.Every)
		}
	}
	if c.Scenario != "throughput" && (c.Refresh < minRefresh || c.Refresh > maxRefresh) {
		problem("refresh", "%v: a room's refresh_interval is from %v to %v", c.Refresh, minRefresh, maxRefresh)
	}
	if c.Scenario == "throughput" || c.Scenario == "flash-crowd" || c.Scenario == "standing-room" {
		switch {
		case c.Redis == "" && (c.RedisCluster || c.CompareEmbedded):
			problem("redis", "--redis-cluster and --compare-embedded need --redis ADDR")
		case c.Redis != "" && !c.RedisCluster && strings.Contains(c.Redis, ","):
			problem("redis", "several addresses need --redis-cluster")
		}
	}
	if c.Scenario == "throughput" {
		c.checkThroughput(problem)
	}
	if c.Scenario == "standing-room" {
		c.checkStanding(set, problem)
	}
	return bad
}

// checkCrowd checks flash-crowd's and autopilot's visitors and room.
func (c *Config) checkCrowd(set map[string]bool, problem func(flag, format string, args ...any)) {
	var err error
	if c.arr, err = bench.ParseArrivals(c.Arrivals); err != nil {
		problem("arrivals", "%v", err)
	}
	for _, d := range []struct {
		flag, s string
		dst     *bench.Dist
	}{{"browse", c.Browse, &c.model.Browse}, {"every", c.Every, &c.model.RequestEvery}, {"patience", c.Patience, &c.model.Patience}} {
		if *d.dst, err = bench.ParseDist(d.s); err != nil {
			problem(d.flag, "%v", err)
		}
	}
	c.model.AbandonFraction = c.Abandon
	if !(c.Abandon >= 0 && c.Abandon <= 1) {
		problem("abandon", "%v is not a share from 0 to 1", c.Abandon)
	}
	if c.Scenario == "flash-crowd" && c.Total < 1 {
		problem("total", "%d: a room lets at least 1 visitor in", c.Total)
	}
	if c.Scenario == "flash-crowd" && c.PerMinute < 1 {
		problem("per-minute", "%d: a room lets at least 1 visitor in a minute", c.PerMinute)
	}
	if c.Scenario == "flash-crowd" && c.Session < minSession {
		problem("session", "%v: a room's session_duration is at least %v", c.Session, minSession)
	}
	if c.Plot != "" {
		if st, err := os.Stat(filepath.Dir(c.Plot)); err != nil || !st.IsDir() {
			problem("plot", "cannot write %s: no folder %s", c.Plot, filepath.Dir(c.Plot))
		}
	}
	switch {
	case c.Nodes < 1 || c.Nodes > 16:
		problem("nodes", "%d: from 1 to 16", c.Nodes)
	case c.Nodes > 1 && c.Redis == "":
		problem("nodes", "several nodes share a store: give --redis ADDR")
	case c.Redis != "" && !c.Self:
		problem("redis", "needs --self (usher runs in this process)")
	}
	switch cs := c.ClockSlack; {
	case set["clock-slack"] && c.Redis == "":
		problem("clock-slack", "nodes on the embedded store count sessions exactly: give --redis ADDR")
	case cs < 0 || cs > config.MaxClockSlack || cs%time.Millisecond != 0:
		problem("clock-slack", "%v: whole milliseconds from 0s to %v", cs, config.MaxClockSlack)
	}
}

// checkThroughput checks the throughput scenario's loads and targets.
func (c *Config) checkThroughput(problem func(flag, format string, args ...any)) {
	if c.Rounds < 1 {
		problem("rounds", "%d: at least 1", c.Rounds)
	}
	if c.Duration <= 0 {
		problem("duration", "%v: must be above zero", c.Duration)
	}
	if c.Workers < 1 {
		problem("workers", "%d: at least 1", c.Workers)
	}
	if c.External && c.Redis != "" {
		problem("external", "measures usher in a process of its own, on the embedded store: not with --redis")
	}
	if c.External && c.Duration < time.Second {
		problem("duration", "%v: --external loads whole seconds (wrk), at least 1s", c.Duration)
	}
	c.targets = nil
	if c.Targets != "" {
		for t := range strings.SplitSeq(c.Targets, ",") {
			if !slices.Contains(ThroughputTargets, t) {
				problem("targets", "unknown target %q (%s)", t, strings.Join(ThroughputTargets, ", "))
			}
			c.targets = append(c.targets, t)
		}
	}
}

// checkStanding checks the standing room's bound, steps and intervals.
func (c *Config) checkStanding(set map[string]bool, problem func(flag, format string, args ...any)) {
	if c.Bound <= 0 {
		problem("bound", "%v: must be above zero", c.Bound)
	}
	if c.MaxWaiters < 1000 {
		problem("max-waiters", "%d: at least 1000, the first step", c.MaxWaiters)
	}
	c.steps = nil
	for _, n := range standingSteps {
		if n <= c.MaxWaiters {
			c.steps = append(c.steps, n)
		}
	}
	if set["steps"] {
		c.steps = nil
		for _, part := range strings.Split(c.Steps, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(part))
			switch {
			case err != nil || n < 1:
				problem("steps", "%q is not a number of waiters", part)
			case len(c.steps) > 0 && n <= c.steps[len(c.steps)-1]:
				problem("steps", "%d after %d: the steps must rise", n, c.steps[len(c.steps)-1])
			case n > 10_000_000:
				problem("steps", "%d: at most 10,000,000", n)
			default:
				c.steps = append(c.steps, n)
			}
		}
	}
	if !set["max-refresh"] {
		c.MaxRefresh = max(c.MaxRefresh, c.Refresh) // the room's default
	}
	switch {
	case c.Nodes < 1 || c.Nodes > 16:
		problem("nodes", "%d: from 1 to 16", c.Nodes)
	case c.Nodes > 1 && c.Redis == "":
		problem("nodes", "several nodes share a store: give --redis ADDR")
	case c.Reference && c.Redis != "":
		problem("reference", "a static server has no store: not with --redis")
	}
	switch {
	case c.Shards < 0 || c.Shards > config.MaxShards: // 0 is 1, as in the config
		problem("shards", "%d: a room's shards are from 1 to %d", c.Shards, config.MaxShards)
	case c.Shards > 1 && c.Redis == "":
		problem("shards", "the embedded store is one process and ignores a room's shards: give --redis ADDR")
	}
	if c.MaxRefresh < c.Refresh || c.MaxRefresh > maxRefresh {
		problem("max-refresh", "%v: a room's max_refresh_interval is from its refresh_interval (%v) to %v", c.MaxRefresh, c.Refresh, maxRefresh)
	}
}
