package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/autopilot"
)

// autopilotCollector reports the effective figures of the governed rooms
// at each scrape.
type autopilotCollector struct {
	p          *autopilot.Pilot
	rate, conc *prometheus.Desc
}

func (c *autopilotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.rate
	ch <- c.conc
}

func (c *autopilotCollector) Collect(ch chan<- prometheus.Metric) {
	for id, st := range c.p.States() {
		ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, float64(st.Rate), id)
		if st.Concurrency > 0 {
			ch <- prometheus.MustNewConstMetric(c.conc, prometheus.GaugeValue, float64(st.Concurrency), id)
		}
	}
}

// registerAutopilotMetrics registers the autopilot's metrics and returns
// the function that counts its changes.
func registerAutopilotMetrics(m *admin.Metrics, p *autopilot.Pilot) func(room string, c autopilot.Change) {
	changes := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "usher_autopilot_changes_total",
		Help: "Changes of a room's effective limits by its autopilot, by direction (down, up) and reason (latency, latency_target, errors, recovered).",
	}, []string{"room", "direction", "reason"})
	m.Registry().MustRegister(changes, &autopilotCollector{
		p: p,
		rate: prometheus.NewDesc("usher_autopilot_rate",
			"The effective new_users_per_minute of a room governed by its autopilot.", []string{"room"}, nil),
		conc: prometheus.NewDesc("usher_autopilot_concurrency",
			"The effective total_active_users of a room whose autopilot governs concurrency.", []string{"room"}, nil),
	})
	return func(room string, c autopilot.Change) {
		changes.WithLabelValues(room, c.Direction, c.Reason).Inc()
	}
}

// autopilotEvent is the data of an autopilot.changed event.
func autopilotEvent(c autopilot.Change) map[string]any {
	d := map[string]any{
		"direction":                 c.Direction,
		"reason":                    c.Reason,
		"from_new_users_per_minute": c.FromRate,
		"to_new_users_per_minute":   c.ToRate,
		"latency_seconds":           c.Latency.Seconds(),
		"error_rate":                c.ErrorRate,
	}
	if c.Threshold > 0 {
		d["threshold_seconds"] = c.Threshold.Seconds()
	}
	if c.ToConc > 0 {
		d["from_total_active_users"], d["to_total_active_users"] = c.FromConc, c.ToConc
	}
	return d
}
