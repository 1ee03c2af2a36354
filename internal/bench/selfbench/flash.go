package selfbench

import (
	"context"
	"fmt"
	"time"

	"github.com/usherhq/usher/internal/bench"
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

// FlashRoom is the flash-crowd scenario's room (YAML of the rooms list):
// its total_active_users, new_users_per_minute, session_duration and
// refresh_interval, then %s where the origin URL goes.
const FlashRoom = `  - id: flash
    origin: %%s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: %d
    session_duration: %s
    refresh_interval: %s
    json_response_enabled: true
`

// Flash runs the flash-crowd scenario: the arrivals into a room of the
// limits given, against usher in this process (--self) or a running one
// (--target).
func Flash(ctx context.Context, f *Config, p *Product) (*FlashResult, error) {
	lim := bench.Limits{
		TotalActiveUsers:  f.Total,
		NewUsersPerMinute: f.PerMinute,
		SessionDuration:   f.Session,
		RefreshInterval:   f.Refresh,
	}
	target := f.Target
	var more []string
	var env *Env
	if f.Self {
		var err error
		env, err = startSelfWith(ctx, fmt.Sprintf(FlashRoom, f.Total, f.PerMinute, f.Session, f.Refresh),
			selfOptions{redis: f.Redis, cluster: f.RedisCluster, nodes: f.Nodes, clockSlack: &f.ClockSlack}, p)
		if err != nil {
			return nil, err
		}
		defer env.Stop()
		target = env.UsherURL + "/"
		for _, u := range env.usherURLs[1:] {
			more = append(more, u+"/")
		}
	}
	line := p.progress("usher bench: ")
	tl, err := bench.Run(ctx, bench.Config{
		Target:   target,
		More:     more,
		Arrivals: f.arr,
		Model:    f.model,
		Seed:     f.Seed,
		Horizon:  time.Hour,
		MaxConns: 1024,
		Progress: func(p bench.Progress) { line.Update(p.String()) },
	})
	line.Done()
	if err != nil {
		return nil, err
	}
	if f.Plot != "" {
		title := fmt.Sprintf("usher flash crowd: %s, %d active, %d/min", f.Arrivals, f.Total, f.PerMinute)
		if err := bench.WritePlot(f.Plot, tl, lim, title); err != nil {
			return nil, fmt.Errorf("--plot: %w", err)
		}
	}
	res := &FlashResult{Scenario: "flash-crowd", Arrivals: f.Arrivals, Limits: lim, Result: bench.Report(tl, lim), Nodes: 1, Store: "embedded"}
	if f.Redis != "" {
		res.Nodes, res.Store = f.Nodes, "redis"
		cs := f.ClockSlack.Seconds()
		res.ClockSlackS = &cs
	}
	if env == nil || len(env.nodes) == 0 {
		return res, nil
	}
	// On Redis with usher in this process: its nodes' counters.
	var late int64
	for _, n := range env.nodes {
		late += n.Engine.LateRenewals()
	}
	res.RenewalsLate = &late
	if spread := env.nodes[0].ClockSpread; spread != nil && f.Nodes > 1 {
		if most, ok := spread(ctx); ok {
			sp := most.Seconds()
			res.ClockSpreadS = &sp
		}
	}
	return res, nil
}
