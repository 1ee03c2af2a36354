package admin

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/usherhq/usher"
)

// decisionBuckets are the upper bounds, in seconds, of the decision duration
// histogram: 50 us to 1 s.
var decisionBuckets = []float64{
	50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1,
}

// Metrics are usher's Prometheus metrics, in a registry of their own that
// also holds the Go runtime and process collectors. A nil *Metrics records
// nothing.
type Metrics struct {
	registry  *prometheus.Registry
	decisions *prometheus.CounterVec
	durations *prometheus.HistogramVec
}

// NewMetrics returns the metrics of the rooms that rooms returns at each
// scrape; status gives each room's live counters when scraped (nil reports
// only decisions and runtime metrics).
func NewMetrics(rooms func() []*usher.Room, status StatusFunc) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "usher_decisions_total",
			Help: "Decisions made by the gate, by room and outcome.",
		}, []string{"room", "outcome"}),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "usher_decision_duration_seconds",
			Help:    "Time taken to decide on a request, by room.",
			Buckets: decisionBuckets,
		}, []string{"room"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.decisions,
		m.durations,
	)
	if rooms != nil && status != nil {
		m.registry.MustRegister(newStatusCollector(rooms, status, time.Now))
	}
	return m
}

// ObserveDecision records one decision on room (its ID) with outcome o that
// took d.
func (m *Metrics) ObserveDecision(room string, o usher.Outcome, d time.Duration) {
	if m == nil {
		return
	}
	m.decisions.WithLabelValues(room, o.String()).Inc()
	m.durations.WithLabelValues(room).Observe(d.Seconds())
}

// Registry returns the registry that holds the metrics, so that other
// components can register theirs.
func (m *Metrics) Registry() *prometheus.Registry { return m.registry }

// handler serves the registry in the Prometheus exposition format.
func (m *Metrics) handler(logger *slog.Logger) http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.registry,
	})
}
