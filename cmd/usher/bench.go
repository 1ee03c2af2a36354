package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher/internal/bench/selfbench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/store/redis"
)

// bench is usher bench: its flags parsed into a selfbench.Config, the
// scenario run by internal/bench/selfbench with usher's own serve code.
func (m *Main) bench(ctx context.Context, args []string) error {
	f, err := m.parseBenchFlags(args)
	if err != nil {
		return err
	}
	out, err := selfbench.Run(ctx, f, m.benchProduct())
	if err != nil {
		return err
	}
	if r, ok := out.(*selfbench.AutopilotResult); ok {
		if f.JSON {
			return writeJSON(m, r)
		}
		return selfbench.WriteAutopilotSummary(m.Stdout, r)
	}
	for _, w := range selfbench.Warnings(out) {
		fmt.Fprintf(m.Stderr, "usher bench: warning: %s\n", w)
	}
	if f.JSON {
		return writeJSON(m, out)
	}
	selfbench.WriteSummary(m.Stdout, out)
	fmt.Fprintln(m.Stdout)
	printTable(m.Stdout, out)
	return nil
}

// parseBenchFlags parses usher bench's command line and checks every value
// and that the flags go together (selfbench.Config.Check); each problem is
// a line on stderr naming the flag and the reason, and the error is
// errUsage (exit code 2).
func (m *Main) parseBenchFlags(args []string) (*selfbench.Config, error) {
	fs := m.flags("bench", "bench --self --scenario flash-crowd|throughput|standing-room|autopilot [flags]")
	var f selfbench.Config
	fs.StringVar(&f.Scenario, "scenario", "flash-crowd", "flash-crowd, throughput, standing-room or autopilot")
	fs.BoolVar(&f.Self, "self", false, "start usher, a sample origin and (throughput) reference reverse proxies on this machine")
	fs.StringVar(&f.Target, "target", "", "flash-crowd against a running usher: the URL of the room (with --total etc. describing it)")
	fs.BoolVar(&f.JSON, "json", false, "print the result as JSON")
	fs.StringVar(&f.Plot, "plot", "", "flash-crowd: write an SVG plot to this file; autopilot: one a case, the case's name before the extension (autopilot.svg: autopilot-high.svg)")
	fs.Uint64Var(&f.Seed, "seed", 1, "seed of arrivals and visitor behaviour")
	fs.StringVar(&f.Arrivals, "arrivals", "flash:5000@30s", "arrival curve: flash:N@D, steady:R/s@D, ramp:N@D, csv:FILE")
	fs.StringVar(&f.Browse, "browse", "2s-8s", "how long an admitted visitor stays")
	fs.StringVar(&f.Every, "every", "1s-3s", "pause between an admitted visitor's requests")
	fs.Float64Var(&f.Abandon, "abandon", 0.2, "share of visitors who give up waiting, from 0 to 1")
	fs.StringVar(&f.Patience, "patience", "5s-60s", "how long those who give up wait")
	fs.IntVar(&f.Total, "total", 1000, "the room's total_active_users")
	fs.IntVar(&f.PerMinute, "per-minute", 3000, "the room's new_users_per_minute")
	fs.DurationVar(&f.Session, "session", 10*time.Second, "the room's session_duration (at least 10s)")
	fs.DurationVar(&f.Refresh, "refresh", 2*time.Second, "the room's refresh_interval (1s to 5m)")
	fs.IntVar(&f.Rounds, "rounds", 3, "throughput: rounds (each measures every target once, interleaved)")
	fs.DurationVar(&f.Duration, "duration", 3*time.Second, "throughput: how long each target is loaded per round")
	fs.IntVar(&f.Workers, "workers", 32, "throughput: requests in flight")
	fs.StringVar(&f.Redis, "redis", "", "throughput, flash-crowd, standing-room: run usher on the Redis store at this address (host:port; seed nodes, comma-separated, with --redis-cluster); standing-room reports the Redis calls per check-in and each master's load")
	fs.BoolVar(&f.RedisCluster, "redis-cluster", false, "throughput, flash-crowd, standing-room: --redis is a Redis Cluster")
	fs.IntVar(&f.Nodes, "nodes", 1, "flash-crowd, standing-room: usher nodes sharing the --redis store; flash-crowd's visitors' requests go to each in turn, standing-room's connections are spread over them (each usher node a process of its own)")
	fs.DurationVar(&f.ClockSlack, "clock-slack", config.DefaultClockSlack, "flash-crowd: with --redis, the nodes' store.redis.clock_slack (whole milliseconds; 0s: they share this machine's clock)")
	fs.BoolVar(&f.CompareEmbedded, "compare-embedded", false, "throughput: with --redis, also measure usher on the embedded store")
	fs.BoolVar(&f.External, "external", false, "throughput: load from outside, as operators measure: wrk (else a Go generator) in a process of its own pinned to the first CPU, every server (origin, proxies, usher, nginx) pinned to the last")
	fs.StringVar(&f.Targets, "targets", "", "throughput: load only these targets, comma-separated ("+strings.Join(selfbench.ThroughputTargets, ", ")+"), e.g. to profile one path")
	fs.DurationVar(&f.Bound, "bound", 50*time.Millisecond, "standing-room: the check-in p99 latency bound")
	fs.IntVar(&f.MaxWaiters, "max-waiters", 100000, "standing-room: the most waiters to try (at least 1000)")
	fs.StringVar(&f.Steps, "steps", "", "standing-room: the numbers of waiters to try, comma-separated and rising (default 1000,10000,100000,250000,500000,1000000 up to --max-waiters)")
	fs.DurationVar(&f.MaxRefresh, "max-refresh", 2*time.Minute, "standing-room: the room's max_refresh_interval (--refresh to 5m)")
	fs.IntVar(&f.Shards, "shards", 1, "standing-room: the room's shards (1 to 16): with --redis, its line spread over a front and shards-1 back shards; the result says how evenly the masters shared the load")
	fs.BoolVar(&f.Reference, "reference", false, "standing-room: a static server in usher's place, giving the same intervals: what the machine and the generator cost alone")
	fs.StringVar(&f.Case, "case", "high", "autopilot: the room's limits 3x too high or too low for the origin: high, low or both")
	fs.BoolVar(&f.SidesAtOnce, "sides-at-once", false, "autopilot: run a case's two sides (fixed limits, autopilot) at once, each under the other's load, in half the time")
	origin := fs.String("origin", selfbench.AutopilotOrigin, "autopilot: the origin in this process: WORKERS,SERVICE,TIMEOUT (a request that waits TIMEOUT for a worker gets 504)")
	fs.DurationVar(&f.Horizon, "horizon", selfbench.AutopilotHorizon, "autopilot: stop each run this long after its start, whoever is still there")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	var bad []string
	if f.Scenario == "autopilot" {
		// usher simulate's --origin, read alike.
		var err error
		if f.Origin, err = parseOrigin(*origin); err != nil {
			bad = append(bad, "--origin: "+err.Error())
		}
	}
	bad = append(f.Check(set), bad...)
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(m.Stderr, "usher bench: %s\n", b)
		}
		return nil, errUsage
	}
	return &f, nil
}

// isBenchChild reports whether this process is one usher bench started as
// one of its targets: the hidden command bench-target runs only then.
func isBenchChild() bool { return os.Getenv(selfbench.ChildEnv) != "" }

// benchTarget is the hidden command bench-target (selfbench.Child): one
// server of usher bench in a process of its own, usher's with its serve
// code.
func (m *Main) benchTarget(ctx context.Context, args []string) error {
	err := selfbench.Child(ctx, args, m.benchProduct(), m.Stdout, m.Stderr)
	if errors.Is(err, selfbench.ErrUsage) {
		return errUsage
	}
	return err
}

// benchProduct is what usher bench runs of usher: its serve code.
func (m *Main) benchProduct() *selfbench.Product {
	return &selfbench.Product{
		Serve: func(ctx context.Context, cfg *config.Config, log *slog.Logger, ready func(public, admin string)) error {
			inner := &Main{Stdout: io.Discard, Stderr: io.Discard, Ready: ready}
			return inner.run(ctx, cfg, log, "")
		},
		StartNode: startNode,
		Progress:  func(prefix string) selfbench.Progress { return m.progress(prefix) },
	}
}

// startNode opens cfg's store and serves cfg's rooms over it on a public
// listener until ctx is done, as Main.run does (the same engine, metrics,
// gate and handler stack; no admin listener, no reloading): a node of
// usher bench on a shared store (selfbench.Product.StartNode).
func startNode(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, log *slog.Logger) (*selfbench.Node, error) {
	store, engineOpts, err := openStore(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	sn := &selfbench.Node{Store: store}
	if rs, ok := store.(*redis.Store); ok {
		sn.ClockSpread = func(ctx context.Context) (time.Duration, bool) {
			_, all, err := rs.Clock(ctx, nil)
			if err != nil || len(all) < 2 {
				return 0, false
			}
			most, _ := redis.ClockApart(all[0], all[1:])
			return most, true
		}
	}
	n, err := newNode(ctx, cfg, log, store, engineOpts)
	if err != nil {
		return sn, err
	}
	sn.Engine = n.engine
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return sn, fmt.Errorf("listen: %w", err)
	}
	wg.Go(func() { _ = server.Serve(ctx, ln, n.handler, log) })
	n.events.node += " " + ln.Addr().String()
	n.background(ctx, wg, cfg, store, log)
	sn.URL = "http://" + ln.Addr().String()
	return sn, nil
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
