package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/local"
)

// parseOrigin parses --origin: WORKERS,SERVICE,TIMEOUT.
func parseOrigin(s string) (bench.OriginModel, error) {
	parts := strings.Split(s, ",")
	if len(parts) != 3 {
		return bench.OriginModel{}, fmt.Errorf("want WORKERS,SERVICE,TIMEOUT such as 20,80ms-120ms,5s, got %q", s)
	}
	w, err := strconv.Atoi(strings.TrimSpace(parts[0]))
	if err != nil || w < 1 || w > 100000 {
		return bench.OriginModel{}, fmt.Errorf("workers %q: want a whole number from 1 to 100000", parts[0])
	}
	svc, err := bench.ParseDist(parts[1])
	if err != nil {
		return bench.OriginModel{}, fmt.Errorf("service time: %w", err)
	}
	to, err := time.ParseDuration(strings.TrimSpace(parts[2]))
	if err != nil || to <= 0 {
		return bench.OriginModel{}, fmt.Errorf("timeout %q: want a duration above zero such as 5s", parts[2])
	}
	m := bench.OriginModel{Workers: w, Service: svc, Timeout: to}
	return m, m.Validate()
}

// autopilotOf reports whether the room has an autopilot anywhere.
func autopilotOf(room *usher.Room) bool { return autopilot.Governed(room) }

// compareRun is usher simulate --compare's input.
type compareRun struct {
	room     *usher.Room
	arrivals string
	arr      bench.Arrivals
	model    bench.VisitorModel
	seed     uint64
	horizon  time.Duration
	origin   bench.OriginModel
	plot     string
	json     bool
}

// CompareSide is one side of a comparison: the origin's health and the
// line's figures.
type CompareSide struct {
	Name string `json:"name"`
	// OriginP99Ms and HealthyP99Ms: the origin's p99 over the run and
	// without load; P99Ratio divides them.
	OriginP50Ms  float64 `json:"origin_p50_ms"`
	OriginP99Ms  float64 `json:"origin_p99_ms"`
	HealthyP99Ms float64 `json:"healthy_p99_ms"`
	P99Ratio     float64 `json:"p99_ratio"`
	ErrorRate    float64 `json:"origin_error_rate"`
	// ThroughputPerS is the successful origin requests a second while
	// the origin was busy.
	ThroughputPerS float64 `json:"origin_throughput_per_s"`
	Requests       int64   `json:"origin_requests"`
	QueuePeak      int     `json:"queue_peak"`
	Drained        bool    `json:"drained"`
	DrainedS       float64 `json:"drained_s"`
	WaitP50S       float64 `json:"wait_p50_s"`
	WaitP90S       float64 `json:"wait_p90_s"`
	Admitted       int     `json:"admitted"`
	// Visitors is the run's visitors (usher bench only).
	Visitors int `json:"visitors,omitempty"`
	Changes  int `json:"autopilot_changes"`
	// Seconds is the run second by second.
	Seconds []bench.OriginSecond `json:"seconds,omitempty"`
	origin  *bench.OriginStats
}

// CompareResult is usher simulate --compare's output.
type CompareResult struct {
	Scenario string        `json:"scenario"`
	Room     string        `json:"room"`
	Arrivals string        `json:"arrivals"`
	Seed     uint64        `json:"seed"`
	Origin   string        `json:"origin"`
	Capacity float64       `json:"origin_capacity_per_s"`
	Sides    []CompareSide `json:"sides"`
}

// simulateCompare runs the room twice on one seed, with its autopilot off
// (the configured limits, fixed) and on, and compares.
func (m *Main) simulateCompare(ctx context.Context, c compareRun) error {
	fixed := *c.room
	fixed.Autopilot = usher.Autopilot{}
	fixed.Events = nil
	for _, ev := range c.room.Events {
		ev.Overrides.Autopilot = nil
		fixed.Events = append(fixed.Events, ev)
	}
	res := CompareResult{Scenario: "simulate-compare", Room: c.room.ID, Arrivals: c.arrivals, Seed: c.seed,
		Origin:   fmt.Sprintf("%d workers, service %v, timeout %v", c.origin.Workers, c.origin.Service, c.origin.Timeout),
		Capacity: c.origin.Capacity()}
	for _, side := range []struct {
		name string
		room *usher.Room
	}{{"fixed limits", &fixed}, {"autopilot", c.room}} {
		store, err := local.Open(local.Options{})
		if err != nil {
			return err
		}
		line := m.progress("usher simulate: " + side.name + ": ")
		tl, err := bench.Simulate(ctx, bench.SimConfig{Room: *side.room, Arrivals: c.arr, Model: c.model, Seed: c.seed,
			Horizon: c.horizon, Store: store, Compact: true, Origin: c.origin,
			Progress: func(p bench.Progress) { line.Update(p.String() + " (simulated time)") }})
		line.Done()
		store.Close()
		if err != nil {
			return err
		}
		r := bench.Report(tl, bench.RoomLimits(c.room))
		o := tl.Origin
		s := CompareSide{Name: side.name, OriginP50Ms: o.P50Ms, OriginP99Ms: o.P99Ms, HealthyP99Ms: o.HealthyP99Ms, ErrorRate: o.ErrorRate,
			ThroughputPerS: o.ThroughputPerS, Requests: o.Requests, QueuePeak: r.QueuePeak, Drained: r.QueueDrained,
			DrainedS: r.QueueDrainedS, WaitP50S: r.WaitP50S, WaitP90S: r.WaitP90S, Admitted: r.Admitted,
			Changes: o.Changes, Seconds: o.Seconds, origin: o}
		if o.HealthyP99Ms > 0 {
			s.P99Ratio = o.P99Ms / o.HealthyP99Ms
		}
		if tl.Horizon {
			fmt.Fprintf(m.Stderr, "usher simulate: warning: %s: the simulated clock reached --horizon %v with visitors still there\n", side.name, c.horizon)
		}
		res.Sides = append(res.Sides, s)
	}
	if c.plot != "" {
		f, err := os.Create(c.plot)
		if err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
		runs := []bench.CompareRun{{Name: res.Sides[0].Name, Origin: res.Sides[0].origin}, {Name: res.Sides[1].Name, Origin: res.Sides[1].origin}}
		if err := bench.PlotCompareSVG(f, runs, fmt.Sprintf("usher simulate --compare: room %s, %s", c.room.ID, c.arrivals)); err != nil {
			f.Close()
			return fmt.Errorf("--plot: %w", err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	if c.json {
		return writeJSON(m, res)
	}
	fmt.Fprintf(m.Stdout, "Room %s, %s, seed %d; origin %s (capacity %.0f requests a second).\n\n",
		res.Room, res.Arrivals, res.Seed, res.Origin, res.Capacity)
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\torigin p99\tvs healthy\terrors\tthroughput\tqueue peak\tdrained at\twait p50\twait p90\tchanges")
	for _, s := range res.Sides {
		drained := "not drained"
		if s.Drained {
			drained = bench.Human(time.Duration(s.DrainedS * float64(time.Second)))
		}
		fmt.Fprintf(tw, "%s\t%.0f ms\t%.2fx\t%.2f %%\t%.0f/s\t%d\t%s\t%s\t%s\t%d\n", s.Name, s.OriginP99Ms, s.P99Ratio, s.ErrorRate*100,
			s.ThroughputPerS, s.QueuePeak, drained, bench.Human(time.Duration(s.WaitP50S*float64(time.Second))),
			bench.Human(time.Duration(s.WaitP90S*float64(time.Second))), s.Changes)
	}
	return tw.Flush()
}
