package main

import (
	"context"
	"fmt"
	"time"

	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis"
)

// FlashResult is usher bench --scenario flash-crowd's output: the report's
// figures and what was run.
type FlashResult struct {
	Scenario string       `json:"scenario"`
	Arrivals string       `json:"arrivals"`
	Limits   bench.Limits `json:"limits"`
	// Nodes is how many usher nodes served the visitors, in turn; Store
	// is their store, "embedded" or "redis".
	Nodes int    `json:"nodes"`
	Store string `json:"store"`
	// ClockSlackS is, on Redis, how long the nodes kept sessions' counts
	// past their end (store.redis.clock_slack), in seconds.
	ClockSlackS *float64 `json:"clock_slack_s,omitempty"`
	// ClockSpreadS is, on Redis with usher in this process, the most the
	// nodes' clocks were apart as they last read them against Redis's
	// (errors included; usher_clock_spread_seconds), in seconds.
	ClockSpreadS *float64 `json:"clock_spread_s,omitempty"`
	// RenewalsLate is, on Redis with usher in this process, how many
	// session renewals the nodes' store answered too late to be sure the
	// session's count had not lapsed first (usher_renewals_late_total):
	// those sessions ran to the end they were counted to.
	RenewalsLate *int64 `json:"renewals_late,omitempty"`
	bench.Result
}

const flashRoom = `  - id: flash
    origin: %%s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: %d
    session_duration: %s
    refresh_interval: %s
    json_response_enabled: true
`

func (m *Main) benchFlash(ctx context.Context, f *benchFlags) (*FlashResult, error) {
	lim := bench.Limits{
		TotalActiveUsers:  f.total,
		NewUsersPerMinute: f.perMinute,
		SessionDuration:   f.session,
		RefreshInterval:   f.refresh,
	}
	target := f.target
	var more []string
	var shared *redis.Store
	var engines []*admission.Engine
	if f.self {
		env, err := m.startSelfWith(ctx, fmt.Sprintf(flashRoom, f.total, f.perMinute, f.session, f.refresh),
			selfOptions{redis: f.redis, cluster: f.redisCluster, nodes: f.nodes, clockSlack: &f.clockSlack})
		if err != nil {
			return nil, err
		}
		defer env.stop()
		shared, engines = env.redis, env.engines
		target = env.usherURL + "/"
		for _, u := range env.usherURLs[1:] {
			more = append(more, u+"/")
		}
	}
	line := m.progress("usher bench: ")
	tl, err := bench.Run(ctx, bench.Config{
		Target:   target,
		More:     more,
		Arrivals: f.arr,
		Model:    f.model,
		Seed:     f.seed,
		Horizon:  time.Hour,
		MaxConns: 1024,
		Progress: func(p bench.Progress) { line.Update(p.String()) },
	})
	line.Done()
	if err != nil {
		return nil, err
	}
	if f.plot != "" {
		title := fmt.Sprintf("usher flash crowd: %s, %d active, %d/min", f.arrivals, f.total, f.perMinute)
		if err := writePlot(f.plot, tl, lim, title); err != nil {
			return nil, fmt.Errorf("--plot: %w", err)
		}
	}
	res := &FlashResult{Scenario: "flash-crowd", Arrivals: f.arrivals, Limits: lim, Result: bench.Report(tl, lim), Nodes: 1, Store: "embedded"}
	if f.redis != "" {
		res.Nodes, res.Store = f.nodes, "redis"
		cs := f.clockSlack.Seconds()
		res.ClockSlackS = &cs
	}
	if shared != nil && len(engines) > 0 {
		var late int64
		for _, e := range engines {
			late += e.LateRenewals()
		}
		res.RenewalsLate = &late
	}
	if shared != nil && f.nodes > 1 {
		if _, all, err := shared.Clock(ctx, nil); err == nil && len(all) > 1 {
			most, _ := redis.ClockApart(all[0], all[1:])
			sp := most.Seconds()
			res.ClockSpreadS = &sp
		}
	}
	return res, nil
}
