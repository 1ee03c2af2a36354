package usher

import "time"

// Autopilot is a room's origin-health governor: it watches the origin's
// latency and error rate and lowers the room's effective admission rate
// (and, with Concurrency, its active-user limit) when the origin degrades,
// then recovers gradually. The zero value is off.
//
// The effective figures always lie within [floor, ceiling]: the floor is
// MinNewUsersPerMinute (zero: a tenth of new_users_per_minute, at least
// 1); the ceiling is MaxNewUsersPerMinute (zero: new_users_per_minute).
// So the effective rate exceeds the configured limit only when the
// operator wrote a ceiling above it. Likewise for TotalActiveUsers.
type Autopilot struct {
	// Enabled turns the governor on.
	Enabled bool
	// MinNewUsersPerMinute and MaxNewUsersPerMinute bound the effective
	// admission rate (zero: a tenth of new_users_per_minute and
	// new_users_per_minute).
	MinNewUsersPerMinute, MaxNewUsersPerMinute int
	// Concurrency governs total_active_users too; otherwise (false) only
	// the rate.
	Concurrency bool
	// MinTotalActiveUsers and MaxTotalActiveUsers bound the effective
	// active-user limit (zero: a tenth of total_active_users and
	// total_active_users).
	MinTotalActiveUsers, MaxTotalActiveUsers int
	// Percentile is the latency percentile watched: 50, 90, 95 or 99
	// (zero: 99).
	Percentile int
	// Sigma: the origin is degraded when the latency exceeds the learned
	// baseline (the median of its samples) by Sigma standard deviations
	// (estimated robustly, 1.4826 x the median absolute deviation; zero:
	// 3)...
	Sigma float64
	// Factor: ...and Factor times the baseline (zero: 1.3), whichever is
	// higher.
	Factor float64
	// LatencyTarget, when positive, is an absolute latency above which the
	// origin is degraded, baseline or not.
	LatencyTarget time.Duration
	// ErrorTarget is the share of 5xx answers and timeouts above which the
	// origin is degraded (zero: 0.01).
	ErrorTarget float64
	// BaselineSamples is how many seconds with traffic the baseline is
	// learned from (zero: 20).
	BaselineSamples int
	// Decrease multiplies the figures in use when the origin degrades
	// (zero: 0.5).
	Decrease float64
	// Recover is the share of the gap to the last good figure (or the
	// ceiling) won back at each step of recovery (zero: 0.25).
	Recover float64
	// MaxChangesPerMinute caps the changes in any minute (zero: 6).
	MaxChangesPerMinute int
	// HealthURL, when set, is probed every ProbeInterval and the probes
	// are the health signal instead of the proxied responses (forward-auth
	// mode, where usher sees no responses).
	HealthURL string
	// ProbeInterval is how often HealthURL is probed (zero: 1s).
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe may take before it counts as an
	// error (zero: 2s).
	ProbeTimeout time.Duration
}

// Health is a room's origin responses in one second, counted by one node
// or summed over all: how many, how many failed (5xx, timeout), and their
// latencies in the fixed buckets of internal/autopilot.
type Health struct {
	Count, Errors int64
	Buckets       []int64
}

// GovernorFigure is a room's effective limits as its autopilot last set
// them, shared by every node. Version counts the changes (0: none yet).
type GovernorFigure struct {
	Version     int64
	Rate        int
	Concurrency int
	At          time.Time
	Reason      string
}
