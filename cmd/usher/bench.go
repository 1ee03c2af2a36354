package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/bench"
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

	// standing-room
	bound      time.Duration
	maxWaiters int
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
	}
	if err != nil {
		return err
	}
	if f.jsonOut {
		return writeJSON(m, out)
	}
	printTable(m.Stdout, out)
	return nil
}

// parseBenchFlags parses usher bench's command line and checks that its flags
// go together.
func (m *Main) parseBenchFlags(args []string) (*benchFlags, error) {
	fs := m.flags("bench", "bench --self --scenario flash-crowd|throughput|standing-room [flags]")
	var f benchFlags
	fs.StringVar(&f.scenario, "scenario", "flash-crowd", "flash-crowd, throughput or standing-room")
	fs.BoolVar(&f.self, "self", false, "start usher, a sample origin and a plain reverse proxy in this process")
	fs.StringVar(&f.target, "target", "", "flash-crowd against a running usher: the URL of the room (with --total etc. describing it)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the result as JSON")
	fs.StringVar(&f.plot, "plot", "", "flash-crowd: write an SVG plot to this file")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of arrivals and visitor behaviour")
	fs.StringVar(&f.arrivals, "arrivals", "flash:5000@30s", "arrival curve: flash:N@D, steady:R/s@D, ramp:N@D, csv:FILE")
	fs.StringVar(&f.browse, "browse", "2s-8s", "how long an admitted visitor stays")
	fs.StringVar(&f.every, "every", "1s-3s", "pause between an admitted visitor's requests")
	fs.Float64Var(&f.abandon, "abandon", 0.2, "share of visitors who give up waiting")
	fs.StringVar(&f.patience, "patience", "5s-60s", "how long those who give up wait")
	fs.IntVar(&f.total, "total", 1000, "the room's total_active_users")
	fs.IntVar(&f.perMinute, "per-minute", 3000, "the room's new_users_per_minute")
	fs.DurationVar(&f.session, "session", 10*time.Second, "the room's session_duration")
	fs.DurationVar(&f.refresh, "refresh", 2*time.Second, "the room's refresh_interval")
	fs.IntVar(&f.rounds, "rounds", 3, "throughput: rounds (each measures every target once, interleaved)")
	fs.DurationVar(&f.duration, "duration", 3*time.Second, "throughput: how long each target is loaded per round")
	fs.IntVar(&f.workers, "workers", 32, "throughput: requests in flight")
	fs.StringVar(&f.redis, "redis", "", "throughput: run usher on the Redis store at this address (host:port; seed nodes, comma-separated, with --redis-cluster)")
	fs.BoolVar(&f.redisCluster, "redis-cluster", false, "throughput: --redis is a Redis Cluster")
	fs.BoolVar(&f.compareEmbedded, "compare-embedded", false, "throughput: with --redis, also measure usher on the embedded store")
	fs.DurationVar(&f.bound, "bound", 50*time.Millisecond, "standing-room: the check-in p99 latency bound")
	fs.IntVar(&f.maxWaiters, "max-waiters", 100000, "standing-room: the most waiters to try")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	usage := func(format string, args ...any) (*benchFlags, error) {
		fmt.Fprintf(m.Stderr, "usher bench: "+format+"\n", args...)
		return nil, errUsage
	}
	switch f.scenario {
	case "flash-crowd", "throughput", "standing-room":
	default:
		return usage("--scenario: unknown scenario %q (flash-crowd, throughput, standing-room)", f.scenario)
	}
	if !f.self && (f.target == "" || f.scenario != "flash-crowd") {
		return usage("--self is needed, except for --scenario flash-crowd with --target URL")
	}
	switch {
	case f.redis != "" && f.scenario != "throughput":
		return usage("--redis: only --scenario throughput runs usher on Redis")
	case f.redis == "" && (f.redisCluster || f.compareEmbedded):
		return usage("--redis-cluster and --compare-embedded need --redis ADDR")
	case f.redis != "" && !f.redisCluster && strings.Contains(f.redis, ","):
		return usage("--redis: several addresses need --redis-cluster")
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
