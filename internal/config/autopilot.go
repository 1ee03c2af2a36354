package config

import (
	"fmt"
	"net/url"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/usherhq/usher"
)

// autopilot decodes an autopilot block over its defaults: the block turns
// the governor on unless it says enabled: false, and every number it
// leaves out takes its default, so that a number written as 0 is refused
// by Validate rather than taken for "default".
func (d *decoder) autopilot(dst *usher.Autopilot) field {
	return func(n *yaml.Node, at loc) {
		*dst = usher.Autopilot{
			Enabled: true, Percentile: 99, Sigma: 3, Factor: 1.3, ErrorTarget: 0.01, BaselineSamples: 20,
			Decrease: 0.5, Recover: 0.25, MaxChangesPerMinute: 6,
			ProbeInterval: time.Second, ProbeTimeout: 2 * time.Second,
		}
		a := dst
		d.mapping(n, at, map[string]field{
			"enabled":                  d.boolean(&a.Enabled),
			"min_new_users_per_minute": d.integer(&a.MinNewUsersPerMinute),
			"max_new_users_per_minute": d.integer(&a.MaxNewUsersPerMinute),
			"concurrency":              d.boolean(&a.Concurrency),
			"min_total_active_users":   d.integer(&a.MinTotalActiveUsers),
			"max_total_active_users":   d.integer(&a.MaxTotalActiveUsers),
			"latency_percentile":       d.integer(&a.Percentile),
			"latency_sigma":            d.number(&a.Sigma),
			"latency_factor":           d.number(&a.Factor),
			"latency_target":           d.duration(&a.LatencyTarget),
			"error_target":             d.number(&a.ErrorTarget),
			"baseline_samples":         d.integer(&a.BaselineSamples),
			"decrease":                 d.number(&a.Decrease),
			"recover":                  d.number(&a.Recover),
			"max_changes_per_minute":   d.integer(&a.MaxChangesPerMinute),
			"health_url":               d.text(&a.HealthURL),
			"probe_interval":           d.duration(&a.ProbeInterval),
			"probe_timeout":            d.duration(&a.ProbeTimeout),
		})
	}
}

// checkAutopilot checks an autopilot block against s, the settings in
// force with it (the room's, or an event's over the room's). The zero
// value is none.
func checkAutopilot(r *report, a *usher.Autopilot, s *usher.Settings, at loc) {
	if *a == (usher.Autopilot{}) {
		return
	}
	bounds := func(name string, lo, hi, configured int) {
		minF, maxF := "min_"+name, "max_"+name
		if lo < 0 {
			r.add(0, at.field(minF), "must be at least 1 (leave it out for a tenth of %s), got %d", name, lo)
		}
		if hi < 0 {
			r.add(0, at.field(maxF), "must be at least 1 (leave it out for %s), got %d", name, hi)
		}
		switch {
		case lo > 0 && hi > 0 && lo > hi:
			r.add(0, at.field(minF), "the floor %d is above the ceiling %s %d", lo, maxF, hi)
		case lo > 0 && hi == 0 && configured > 0 && lo > configured:
			r.add(0, at.field(minF), "the floor %d is above the ceiling, %s %d (set %s to raise the ceiling)", lo, name, configured, maxF)
		}
	}
	bounds("new_users_per_minute", a.MinNewUsersPerMinute, a.MaxNewUsersPerMinute, s.NewUsersPerMinute)
	bounds("total_active_users", a.MinTotalActiveUsers, a.MaxTotalActiveUsers, s.TotalActiveUsers)
	if !a.Concurrency && (a.MinTotalActiveUsers != 0 || a.MaxTotalActiveUsers != 0) {
		r.add(0, at.field("concurrency"), "must be true for min_total_active_users or max_total_active_users to apply")
	}
	switch a.Percentile {
	case 50, 90, 95, 99:
	default:
		r.add(0, at.field("latency_percentile"), "must be 50, 90, 95 or 99, got %d", a.Percentile)
	}
	positive := func(name string, v float64, what string) {
		if v <= 0 {
			r.add(0, at.field(name), "must be above 0 (%s), got %v", what, v)
		}
	}
	positive("latency_sigma", a.Sigma, "the standard deviations over the baseline that mean degraded; 3 by default")
	if a.Factor <= 1 {
		r.add(0, at.field("latency_factor"), "must be above 1 (the multiple of the baseline that means degraded; 1.3 by default), got %v", a.Factor)
	}
	if a.LatencyTarget < 0 {
		r.add(0, at.field("latency_target"), "must not be negative (leave it out for none), got %v", a.LatencyTarget)
	}
	if a.ErrorTarget <= 0 || a.ErrorTarget >= 1 {
		r.add(0, at.field("error_target"), "must be above 0 and below 1 (a share of the responses, 0.01 by default), got %v", a.ErrorTarget)
	}
	if a.BaselineSamples < 5 || a.BaselineSamples > 3600 {
		r.add(0, at.field("baseline_samples"), "must be from 5 to 3600 seconds, got %d", a.BaselineSamples)
	}
	if a.Decrease <= 0 || a.Decrease >= 1 {
		r.add(0, at.field("decrease"), "must be above 0 and below 1 (the factor a degradation multiplies the limits by, 0.5 by default), got %v", a.Decrease)
	}
	if a.Recover <= 0 || a.Recover > 1 {
		r.add(0, at.field("recover"), "must be above 0 and at most 1 (the share of the gap won back per step, 0.25 by default), got %v", a.Recover)
	}
	if a.MaxChangesPerMinute < 1 || a.MaxChangesPerMinute > 60 {
		r.add(0, at.field("max_changes_per_minute"), "must be from 1 to 60, got %d", a.MaxChangesPerMinute)
	}
	if a.HealthURL != "" {
		if u, err := url.Parse(a.HealthURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			r.add(0, at.field("health_url"), "must be an absolute http or https URL, got %q", a.HealthURL)
		}
	}
	if a.ProbeInterval < 100*time.Millisecond || a.ProbeInterval > time.Minute {
		r.add(0, at.field("probe_interval"), "must be from 100ms to 1m, got %v", a.ProbeInterval)
	}
	if a.ProbeTimeout <= 0 || a.ProbeTimeout > time.Minute {
		r.add(0, at.field("probe_timeout"), "must be above 0 and at most 1m, got %v", a.ProbeTimeout)
	}
}

// autopilotClause describes the governor for usher check.
func autopilotClause(s *usher.Settings) string {
	a := &s.Autopilot
	if !a.Enabled {
		return "no autopilot"
	}
	rate := fmt.Sprintf("%d to %d admissions a minute", or(a.MinNewUsersPerMinute, max(s.NewUsersPerMinute/10, 1)), or(a.MaxNewUsersPerMinute, s.NewUsersPerMinute))
	conc := "the active-user limit stays fixed"
	if a.Concurrency {
		conc = fmt.Sprintf("the active-user limit from %d to %d", or(a.MinTotalActiveUsers, max(s.TotalActiveUsers/10, 1)), or(a.MaxTotalActiveUsers, s.TotalActiveUsers))
	}
	signal := "the proxied responses"
	if a.HealthURL != "" {
		signal = fmt.Sprintf("a probe of %s every %v", a.HealthURL, a.ProbeInterval)
	}
	degraded := fmt.Sprintf("p%d latency above its baseline (learned over %d s) by %g sigma and x%g", a.Percentile, a.BaselineSamples, a.Sigma, a.Factor)
	if a.LatencyTarget > 0 {
		degraded += fmt.Sprintf(", or above %v", a.LatencyTarget)
	}
	degraded += fmt.Sprintf(", or more than %g %% errors", a.ErrorTarget*100)
	start := "the floor"
	if a.MaxNewUsersPerMinute > s.NewUsersPerMinute {
		start = "the configured rate (a ceiling above it is written)"
	}
	return fmt.Sprintf("autopilot watches the origin's health from %s: it starts from %s, or what is in use if more, and, while people wait and the origin is healthy, wins back %g of the gap at a time, 30 %% more at most until the first sign of degradation (two degraded seconds within 20 s, which undo such a step), then 15 %%; when the origin degrades (%s), it multiplies the limits in use by %g; at most %d increases and %d decreases a minute, the rate within %s, paced evenly over the minute, %s",
		signal, start, a.Recover, degraded, a.Decrease, a.MaxChangesPerMinute, a.MaxChangesPerMinute, rate, conc)
}

func or(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}
