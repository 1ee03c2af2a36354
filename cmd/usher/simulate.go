package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/local"
)

// SimulateResult is usher simulate's output: the report of the simulated
// visitors (the same figures as usher bench), and the queue over time.
type SimulateResult struct {
	Scenario string  `json:"scenario"`
	Room     string  `json:"room"`
	Arrivals string  `json:"arrivals"`
	Seed     uint64  `json:"seed"`
	ElapsedS float64 `json:"elapsed_s"`
	MaxQueue int     `json:"max_waiting"`
	Drained  bool    `json:"drained"`
	DrainedS float64 `json:"drained_s"`
	// Mode is how the waiters were simulated: one-by-one (every check-in
	// decided) or aggregate (far-back waiters parked; see --aggregate).
	Mode string `json:"mode"`
	// Aggregate is what aggregate mode did (mode aggregate).
	Aggregate *bench.AggregateStats `json:"aggregate,omitempty"`
	bench.Result
	Waits []bench.MinuteWaits `json:"waits_by_arrival_minute"`
	// Origin is the simulated origin's figures (with --origin).
	Origin *bench.OriginStats `json:"origin,omitempty"`
	// Learned is the prior this run's line used and what it teaches the
	// room's next event; LearnedFrom, with --prior auto, what the earlier
	// event taught this one.
	Learned     *bench.LearnedStats `json:"learned,omitempty"`
	LearnedFrom *bench.LearnedStats `json:"learned_from,omitempty"`
	// Load is the Redis load the run implies (with --nodes, --shards,
	// --script-cost or --move-cost).
	Load *bench.LoadStats `json:"load,omitempty"`
}

func (m *Main) simulate(ctx context.Context, args []string) error {
	fs := m.flags("simulate", "simulate --config FILE --room ID --arrivals SPEC [flags]")
	path := fs.String("config", "usher.yaml", "the config file whose room to simulate")
	roomID := fs.String("room", "", "the room (default: the config's only room)")
	arrivals := fs.String("arrivals", "flash:50000@2m", "arrival curve: flash:N@D, steady:R/s@D, ramp:N@D, csv:FILE")
	browse := fs.String("browse", "4m", "how long an admitted visitor stays")
	every := fs.String("every", "30s", "pause between an admitted visitor's requests")
	abandon := fs.String("abandon", "20%@10m", "share of visitors who give up waiting, and after how long (PERCENT@DIST)")
	seed := fs.Uint64("seed", 1, "seed: the same seed gives the same run")
	horizon := fs.Duration("horizon", 24*time.Hour, "stop the simulated clock at this time")
	jsonOut := fs.Bool("json", false, "print the result as JSON")
	plot := fs.String("plot", "", "write an SVG plot to this file")
	originSpec := fs.String("origin", "", "simulate the origin: WORKERS,SERVICE,TIMEOUT such as 20,80ms-120ms,5s (latency and errors grow with its load)")
	aggregate := fs.String("aggregate", "auto", "park far-back waiters instead of simulating each of their check-ins: on, off, or auto (on from "+strconv.Itoa(aggregateFrom)+" visitors when the room allows it)")
	priorSpec := fs.String("prior", "off", "what the room learned from an earlier event: off, auto (simulate the same crowd once before, with seed+1, and learn from it), or a factor such as 1.4")
	compare := fs.Bool("compare", false, "run twice, with fixed limits and with the room's autopilot, and compare the origin's health (needs --origin)")
	nodes := fs.Int("nodes", 1, "model the Redis load on this many usher nodes (any of --nodes, --shards, --script-cost, --move-cost turns the model on)")
	shards := fs.Int("shards", 1, "model the Redis load with the room over this many shards: the front and shards-1 back shards")
	scriptCost := fs.Duration("script-cost", bench.DefaultScriptCost, "the load model's time of one script call on a Redis core")
	moveCost := fs.Duration("move-cost", bench.DefaultMoveCost, "the load model's time a batched far-back move adds to its batch's call")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (for go tool pprof)")
	if err := parse(fs, args); err != nil {
		return err
	}
	// Every flag's value first, each problem on a line naming the flag.
	var bad []string
	problem := func(flag string, err error) { bad = append(bad, "--"+flag+": "+err.Error()) }
	var load *bench.LoadModel
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "nodes", "shards", "script-cost", "move-cost":
			load = &bench.LoadModel{Nodes: *nodes, Shards: *shards, ScriptCost: *scriptCost, MoveCost: *moveCost}
		}
	})
	if *nodes < 1 || *nodes > 10_000 {
		problem("nodes", fmt.Errorf("%d: want 1 to 10000", *nodes))
	}
	if *shards < 1 || *shards > bench.MaxLoadShards {
		problem("shards", fmt.Errorf("%d: want 1 to %d", *shards, bench.MaxLoadShards))
	}
	if *scriptCost <= 0 {
		problem("script-cost", fmt.Errorf("%v: must be above zero", *scriptCost))
	}
	if *moveCost < 0 {
		problem("move-cost", fmt.Errorf("%v: must not be negative", *moveCost))
	}
	arr, err := bench.ParseArrivals(*arrivals)
	if err != nil {
		problem("arrivals", err)
	}
	model := bench.VisitorModel{}
	if model.Browse, err = bench.ParseDist(*browse); err != nil {
		problem("browse", err)
	}
	if model.RequestEvery, err = bench.ParseDist(*every); err != nil {
		problem("every", err)
	}
	if model.AbandonFraction, model.Patience, err = parseAbandon(*abandon); err != nil {
		problem("abandon", err)
	}
	if *horizon <= 0 {
		problem("horizon", fmt.Errorf("%v: must be above zero", *horizon))
	}
	var origin bench.OriginModel
	if *originSpec != "" {
		if origin, err = parseOrigin(*originSpec); err != nil {
			problem("origin", err)
		}
	}
	prior, learnFirst := 0.0, false
	switch *priorSpec {
	case "off":
	case "auto":
		learnFirst = true
	default:
		f, err := strconv.ParseFloat(*priorSpec, 64)
		if err == nil && (math.IsNaN(f) || math.IsInf(f, 0) || f <= 0) {
			err = errors.New("not a positive number")
		}
		if err != nil {
			problem("prior", fmt.Errorf("%q: want off, auto or a factor above zero (%v)", *priorSpec, err))
		}
		prior = f
	}
	if *compare && *priorSpec != "off" {
		problem("prior", fmt.Errorf("not with --compare"))
	}
	switch *aggregate {
	case "auto", "on", "off":
	default:
		problem("aggregate", fmt.Errorf("%q: want on, off or auto", *aggregate))
	}
	if *compare && load != nil {
		problem("nodes", fmt.Errorf("the load model (--nodes, --shards, --script-cost, --move-cost) is not with --compare"))
	}
	if *compare && *originSpec == "" {
		problem("compare", fmt.Errorf("needs --origin: the comparison is of the origin's health"))
	}
	if *plot != "" {
		if st, err := os.Stat(filepath.Dir(*plot)); err != nil || !st.IsDir() {
			problem("plot", fmt.Errorf("cannot write %s: no folder %s", *plot, filepath.Dir(*plot)))
		}
	}
	if *cpuProfile != "" {
		if st, err := os.Stat(filepath.Dir(*cpuProfile)); err != nil || !st.IsDir() {
			problem("cpuprofile", fmt.Errorf("cannot write %s: no folder %s", *cpuProfile, filepath.Dir(*cpuProfile)))
		}
	}
	if _, err := os.Stat(*path); err != nil {
		problem("config", err)
	}
	var cfg *config.Config
	var room *usher.Room
	if len(bad) == 0 {
		if cfg, err = config.Load(*path); err != nil {
			return configError(*path, err)
		}
		if room, err = pickRoom(cfg, *roomID); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) == 0 && *compare && !autopilotOf(room) {
		bad = append(bad, fmt.Sprintf("--compare: room %q has no autopilot block to compare with fixed limits", room.ID))
	}
	agg := false
	if len(bad) == 0 && !*compare {
		why := bench.AggregateOK(room, origin)
		switch {
		case *aggregate == "on" && why != nil:
			bad = append(bad, "--aggregate: on: "+why.Error())
		case *aggregate == "on", *aggregate == "auto" && why == nil && arr.Len() >= aggregateFrom:
			agg = true
		}
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Fprintf(m.Stderr, "usher simulate: %s\n", b)
		}
		return errUsage
	}
	if *compare {
		return m.simulateCompare(ctx, compareRun{room: room, arrivals: *arrivals, arr: arr, model: model, seed: *seed,
			horizon: *horizon, origin: origin, plot: *plot, json: *jsonOut})
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	run := func(seed uint64, prior float64, what string) (*bench.Timeline, error) {
		store, err := local.Open(local.Options{})
		if err != nil {
			return nil, err
		}
		defer store.Close()
		line := m.progress("usher simulate: " + what)
		tl, err := bench.Simulate(ctx, bench.SimConfig{Room: *room, Arrivals: arr, Model: model, Seed: seed, Horizon: *horizon, Store: store, Compact: true, Origin: origin, Aggregate: agg, Prior: prior, Load: load,
			Progress: func(p bench.Progress) { line.Update(p.String() + " (simulated time)") }})
		line.Done()
		return tl, err
	}
	var learnedFrom *bench.LearnedStats
	if learnFirst {
		// The room's earlier event: the same crowd with other visitors.
		first, err := run(*seed+1, 0, "the earlier event: ")
		if err != nil {
			return err
		}
		learnedFrom = first.Learned
		if learnedFrom.OK {
			prior = learnedFrom.Factor
		}
	}
	tl, err := run(*seed, prior, "")
	if err != nil {
		return err
	}
	lim := bench.RoomLimits(room)
	sum := bench.SimSummary(tl, lim, time.Second)
	res := &SimulateResult{
		Scenario: "simulate", Room: room.ID, Arrivals: *arrivals, Seed: *seed,
		ElapsedS: time.Since(start).Seconds(),
		MaxQueue: sum.MaxWaiting, Drained: sum.Drained, DrainedS: sum.DrainedS,
		Mode: "one-by-one", Aggregate: tl.Aggregate,
		Result: bench.Report(tl, lim), Waits: sum.Waits, Origin: tl.Origin,
	}
	if tl.Aggregate != nil {
		res.Mode = "aggregate"
	}
	res.Learned, res.LearnedFrom = tl.Learned, learnedFrom
	res.Load = tl.Load
	if learnedFrom != nil && !learnedFrom.OK {
		res.Warnings = append(res.Warnings, fmt.Sprintf("--prior auto: the earlier event had %d waiters with a cold first page, fewer than %d: no prior was learned", learnedFrom.Waiters, analytics.MinLearned))
	}
	if tl.Horizon {
		res.Warnings = append(res.Warnings, fmt.Sprintf("the simulated clock reached --horizon %v with visitors still there; raise it to see the end", *horizon))
	}
	if *plot != "" {
		if err := bench.WritePlot(*plot, tl, lim, fmt.Sprintf("usher simulate: room %s, %s", room.ID, *arrivals)); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(m.Stderr, "usher simulate: warning: %s\n", w)
	}
	if *jsonOut {
		return writeJSON(m, res)
	}
	fmt.Fprintf(m.Stdout, "Simulated room %s (%s, seed %d): %s of event in %s.\n", room.ID, *arrivals, *seed,
		bench.Human(tl.End.Sub(tl.Start)), bench.Human(time.Duration(res.ElapsedS*float64(time.Second))))
	if a := res.Aggregate; a != nil {
		fmt.Fprintf(m.Stdout, "Aggregate mode: %d decisions; far-back waiters parked %d times, %d check-ins applied in bulk.\n",
			a.Decisions, a.Parked, a.Skipped)
	}
	if l := res.Learned; l != nil && (l.Prior != 1 || learnFirst) {
		fmt.Fprintf(m.Stdout, "Cold first pages scaled by the prior %.2f (learned from an earlier event); %d waiters had one.\n", l.Prior, l.Waiters)
	}
	bench.WriteSummary(m.Stdout, res.Result, lim)
	fmt.Fprintln(m.Stdout)
	printTable(m.Stdout, res)
	if res.Load != nil {
		fmt.Fprintln(m.Stdout)
		writeLoad(m.Stdout, res.Load)
	}
	return nil
}

// aggregateFrom is the crowd from which --aggregate auto parks far-back
// waiters.
const aggregateFrom = 100_000

// pickRoom returns the room with id, or the config's only room.
func pickRoom(cfg *config.Config, id string) (*usher.Room, error) {
	var ids []string
	for i := range cfg.Rooms {
		if cfg.Rooms[i].ID == id || (id == "" && len(cfg.Rooms) == 1) {
			return &cfg.Rooms[i], nil
		}
		ids = append(ids, cfg.Rooms[i].ID)
	}
	if id == "" {
		return nil, fmt.Errorf("--room: the config has %d rooms (%s); name one", len(ids), strings.Join(ids, ", "))
	}
	return nil, fmt.Errorf("--room: no room %q in the config (it has %s)", id, strings.Join(ids, ", "))
}

// parseAbandon parses PERCENT@DIST, such as 20%@10m or 0.2@exp:5m.
func parseAbandon(s string) (float64, bench.Dist, error) {
	frac, dist, ok := strings.Cut(s, "@")
	if !ok {
		return 0, bench.Dist{}, fmt.Errorf("want PERCENT@DURATION such as 20%%@10m, got %q", s)
	}
	var f float64
	var err error
	if p, isPct := strings.CutSuffix(frac, "%"); isPct {
		f, err = strconv.ParseFloat(p, 64)
		f /= 100
	} else {
		f, err = strconv.ParseFloat(frac, 64)
	}
	if err != nil || f < 0 || f > 1 {
		return 0, bench.Dist{}, fmt.Errorf("share %q is not a percentage from 0%% to 100%%", frac)
	}
	d, err := bench.ParseDist(dist)
	if err != nil {
		return 0, bench.Dist{}, err
	}
	return f, d, nil
}
