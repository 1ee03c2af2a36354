package admin

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

// decisionBuckets are the upper bounds, in seconds, of the decision duration
// histogram: 50 us to 1 s.
var decisionBuckets = []float64{
	50e-6, 100e-6, 250e-6, 500e-6,
	1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3,
	100e-3, 250e-3, 500e-3, 1,
}

// queueWaitBuckets are the upper bounds, in seconds, of the time in queue
// histogram: admitted at once, then 1 s to 4 h.
var queueWaitBuckets = []float64{0.5, 1, 5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}

// originTimeBuckets are the upper bounds, in seconds, of the time on origin
// histogram: 10 s to 4 h.
var originTimeBuckets = []float64{10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}

// etaErrorBuckets are the upper bounds, in percent of the actual wait, of
// the announced wait's error.
var etaErrorBuckets = []float64{5, 10, 25, 50, 100, 200, 500}

// Metrics are usher's Prometheus metrics, in a registry of their own that
// also holds the Go runtime and process collectors. A nil *Metrics records
// nothing. Metrics is an admission.Observer: the engine's observations
// make the per-visitor counters and histograms.
type Metrics struct {
	registry   *prometheus.Registry
	requests   *prometheus.CounterVec
	durations  *prometheus.HistogramVec
	arrivals   *prometheus.CounterVec
	admissions *prometheus.CounterVec
	revoked    *prometheus.CounterVec
	ended      *prometheus.CounterVec
	queueWait  *prometheus.HistogramVec
	originTime *prometheus.HistogramVec
	etaError   *prometheus.HistogramVec
	status     *statusCollector // nil without rooms and status
}

var _ admission.Observer = (*Metrics)(nil)

// NewMetrics returns the metrics of the rooms that rooms returns at each
// scrape; status gives each room's live counters when scraped (nil reports
// only decisions and runtime metrics).
func NewMetrics(rooms func() []*usher.Room, status StatusFunc) *Metrics {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, []string{"room"})
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, []string{"room"})
	}
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "usher_requests_total",
			Help: "Requests the gate decided on, by room and outcome (an admitted visitor's every request counts as admit; usher_admissions_total counts visitors).",
		}, []string{"room", "outcome"}),
		arrivals:   counter("usher_arrivals_total", "New visitors: first tickets issued."),
		admissions: counter("usher_admissions_total", "Visitors admitted, each counted once."),
		revoked:    counter("usher_revoked_sessions_total", "Sessions ended at once by an origin's revoke."),
		ended:      counter("usher_ended_sessions_total", "Admitted visitors seen again after their session ended."),
		queueWait:  histogram("usher_queue_wait_seconds", "Time from arrival to admission of the visitors admitted.", queueWaitBuckets),
		originTime: histogram("usher_origin_time_seconds", "Time from admission to last counted activity of the sessions seen ending.", originTimeBuckets),
		etaError:   histogram("usher_eta_error_percent", "Error of the wait announced on a visitor's first waiting page, in percent of the actual wait.", etaErrorBuckets),
		durations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "usher_decision_duration_seconds",
			Help:    "Time taken to decide on a request, by room.",
			Buckets: decisionBuckets,
		}, []string{"room"}),
	}
	m.registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests,
		m.durations,
		m.arrivals,
		m.admissions,
		m.revoked,
		m.ended,
		m.queueWait,
		m.originTime,
		m.etaError,
	)
	if rooms != nil && status != nil {
		m.status = newStatusCollector(rooms, status, time.Now)
		m.registry.MustRegister(m.status)
	}
	return m
}

// ObserveDecision records one decision on room (its ID) with outcome o that
// took d.
func (m *Metrics) ObserveDecision(room string, o usher.Outcome, d time.Duration) {
	if m == nil {
		return
	}
	m.requests.WithLabelValues(room, o.String()).Inc()
	m.durations.WithLabelValues(room).Observe(d.Seconds())
}

// Observe implements admission.Observer.
func (m *Metrics) Observe(room string, o admission.Observation) {
	if m == nil {
		return
	}
	switch o.What {
	case admission.Arrived:
		m.arrivals.WithLabelValues(room).Inc()
	case admission.Admitted:
		m.admissions.WithLabelValues(room).Inc()
		m.queueWait.WithLabelValues(room).Observe(o.Queued.Seconds())
		if o.Announced > 0 {
			diff := (o.Queued - o.Announced).Abs()
			m.etaError.WithLabelValues(room).Observe(100 * diff.Seconds() / max(o.Queued, time.Second).Seconds())
		}
	case admission.Ended:
		m.ended.WithLabelValues(room).Inc()
		if o.OnOrigin > 0 {
			m.originTime.WithLabelValues(room).Observe(o.OnOrigin.Seconds())
		}
	case admission.Revoked:
		m.revoked.WithLabelValues(room).Inc()
	}
}

// LapsedFunc reads a room's count of lapsed (abandoned) waiters
// (usher.Store.Lapsed).
type LapsedFunc func(ctx context.Context, room string, now time.Time) (int64, error)

// SetLapsed makes scrapes report usher_abandoned_waiters_total from fn
// (the store's count; without it the metric is not reported).
func (m *Metrics) SetLapsed(fn LapsedFunc) {
	if m == nil || m.status == nil {
		return
	}
	m.status.lapsed.Store(&fn)
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
