package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/redis"
)

// clockEvery is how often a node on a shared store reads its clock against
// the store's.
const clockEvery = 10 * time.Second

// clockTries is how many readings a round takes; the one with the shortest
// round trip (the smallest error) counts.
const clockTries = 3

// clockReader is a store that reads a node's clock against its own (the
// Redis store).
type clockReader interface {
	Clock(ctx context.Context, publish *redis.ClockReading) (redis.ClockReading, []redis.ClockReading, error)
}

// clockWatch reads a node's clock against the shared store's, publishes
// the reading for the other nodes, and, when the nodes' clocks are further
// apart than clock_slack (a session ending within the difference could
// then be counted out early by a node whose clock is ahead), tells the
// operator and raises the slack of the sessions counted from then on to
// cover the difference, until the clocks are back within clock_slack
// (docs/scaling.md).
type clockWatch struct {
	store clockReader
	node  string
	slack time.Duration // clock_slack
	// set, when not nil, puts a slack in force (the engine's
	// SetCellSlack).
	set func(time.Duration)
	// measured, when not nil, is told each round's spread (the engine's
	// SetClockSpread: how long a renewal has to come back).
	measured func(time.Duration)
	log      *slog.Logger

	mu      sync.Mutex
	own     redis.ClockReading
	spread  time.Duration
	nodes   int
	inForce time.Duration // the slack in force: clock_slack, or raised (newClockWatch)
	known   bool          // a round has succeeded
	over    bool          // the spread exceeded the slack at the last round
}

// newClockWatch returns the watch of a node on store whose clock_slack is
// slack, putting slacks in force with set.
func newClockWatch(store clockReader, slack time.Duration, set func(time.Duration), log *slog.Logger) *clockWatch {
	return &clockWatch{store: store, slack: slack, inForce: slack, set: set, log: log}
}

// raised is the slack that covers the nodes' clocks spread apart: the
// spread and a quarter (the clocks drift between readings), to the
// millisecond, at most config.MaxClockSlack.
func raised(spread time.Duration) time.Duration {
	d := spread + spread/4
	return min((d + time.Millisecond - 1).Truncate(time.Millisecond), config.MaxClockSlack)
}

// run reads the clocks every clockEvery until ctx ends.
func (w *clockWatch) run(ctx context.Context) {
	t := time.NewTicker(clockEvery)
	defer t.Stop()
	for {
		w.round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// round takes clockTries readings, publishes the best, and judges the
// spread of every node's latest reading.
func (w *clockWatch) round(ctx context.Context) {
	var best redis.ClockReading
	var all []redis.ClockReading
	ok := false
	for i := 0; i <= clockTries; i++ {
		var pub *redis.ClockReading
		if i == clockTries {
			if !ok {
				return
			}
			pub = &best
		}
		r, published, err := w.store.Clock(ctx, pub)
		if err != nil {
			w.log.Debug("clock reading failed", "err", err)
			continue
		}
		r.Node = w.node
		if !ok || r.Error < best.Error {
			best = r
		}
		ok, all = true, published
	}
	if !ok {
		return
	}
	// Judged on what the readings prove: a slow round trip widens a
	// reading's bounds, never the proof that clocks are apart. The slack
	// raised covers what they allow.
	spread, proven := redis.ClockApart(best, all)
	nodes := 1
	for _, r := range all {
		if r.Node != w.node {
			nodes++
		}
	}
	if w.measured != nil {
		w.measured(spread)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.own, w.spread, w.nodes, w.known = best, spread, nodes, true
	over := proven > w.slack
	slack := w.slack
	if over {
		slack = raised(spread)
	}
	switch {
	case over && !w.over:
		w.log.Warn("clocks: the nodes' clocks are further apart than store.redis.clock_slack; sessions counted from now on keep their count longer to cover it, which leaves places idle, and sessions counted before can be counted out early by a node whose clock is ahead: synchronise the clocks (NTP) or raise clock_slack",
			"apart_at_least", proven.Round(time.Microsecond), "apart_at_most", spread.Round(time.Microsecond), "clock_slack", w.slack, "slack_in_force", slack, "nodes", nodes, "offset", best.Offset.Round(time.Microsecond))
	case !over && w.over:
		w.log.Info("clocks: the nodes' clocks are within store.redis.clock_slack again",
			"apart_at_most", spread.Round(time.Microsecond), "clock_slack", w.slack, "nodes", nodes)
	}
	w.over = over
	if slack != w.inForce {
		w.inForce = slack
		if w.set != nil {
			w.set(slack)
		}
	}
}

// figures returns the last round's reading, spread and node count; ok is
// false before a round succeeded.
func (w *clockWatch) figures() (own redis.ClockReading, spread time.Duration, nodes int, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.own, w.spread, w.nodes, w.known
}

// register adds the clock figures to the metrics.
func (w *clockWatch) register(m *admin.Metrics) {
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, f)
	}
	m.Registry().MustRegister(
		gauge("usher_clock_offset_seconds", "The shared store's clock less this node's, as last read (TIME, best of three round trips).", func() float64 {
			own, _, _, _ := w.figures()
			return own.Offset.Seconds()
		}),
		gauge("usher_clock_error_seconds", "How far usher_clock_offset_seconds can be off: half the reading's round trip.", func() float64 {
			own, _, _, _ := w.figures()
			return own.Error.Seconds()
		}),
		gauge("usher_clock_spread_seconds", "The most any two nodes' clocks can be apart, from every node's reading of the last minute (errors included); above store.redis.clock_slack, sessions can be counted out early.", func() float64 {
			_, spread, _, _ := w.figures()
			return spread.Seconds()
		}),
		gauge("usher_clock_nodes", "Nodes that read their clock against the shared store in the last minute, this one included.", func() float64 {
			_, _, n, _ := w.figures()
			return float64(n)
		}),
		gauge("usher_clock_slack_seconds", "How long the count of a session counted now outlives it: store.redis.clock_slack, or more while the nodes' clocks are further apart than that.", func() float64 {
			w.mu.Lock()
			defer w.mu.Unlock()
			return w.inForce.Seconds()
		}),
	)
}
