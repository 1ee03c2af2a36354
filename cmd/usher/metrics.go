package main

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/store/redis"
)

// registerEngineMetrics adds the engine's store health to the metrics.
func registerEngineMetrics(m *admin.Metrics, e *admission.Engine) {
	m.Registry().MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "usher_store_up",
			Help: "1 while decisions use the store, 0 while the fail mode applies.",
		}, func() float64 {
			if e.StoreDown() {
				return 0
			}
			return 1
		}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_store_errors_total",
			Help: "Store calls that failed.",
		}, func() float64 { return float64(e.StoreErrors()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_failmode_decisions_total",
			Help: "Decisions made by the fail mode while the store could not be reached.",
		}, func() float64 { return float64(e.FailModeDecisions()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_lost_answers_total",
			Help: "Decisions on a ticket one answer behind the store's record (a store call applied whose answer was lost): taken over, or its counted admission delivered or started over.",
		}, func() float64 { return float64(e.LostAnswers()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_renewals_late_total",
			Help: "Session renewals the store answered too late to be sure the session's count had not lapsed first (later than the clock slack less the clocks' spread after the request): their sessions ran to the end they were counted to.",
		}, func() float64 { return float64(e.LateRenewals()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_checkins_lapsed_total",
			Help: "Waiters' check-ins decided after their waiting count had expired (the page came back later than its grace): later arrivals may have passed them meanwhile.",
		}, func() float64 { return float64(e.LapsedCheckIns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "usher_renewals_owed",
			Help: fmt.Sprintf("Session renewals this node let through while the store could not be reached and will replay once it answers (at most %d).", admission.MaxPendingRenewals),
		}, func() float64 { return float64(e.PendingRenewals()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_renewals_replayed_total",
			Help: "Owed session renewals made once the store answered again.",
		}, func() float64 { return float64(e.ReplayedRenewals()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_renewals_owed_dropped_total",
			Help: fmt.Sprintf("Owed session renewals dropped, the oldest first, because %d were owed already.", admission.MaxPendingRenewals),
		}, func() float64 { bound, _ := e.DroppedRenewals(); return float64(bound) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "usher_renewals_owed_expired_total",
			Help: "Owed session renewals not replayed because the store answered only after the session's count may have lapsed.",
		}, func() float64 { _, late := e.DroppedRenewals(); return float64(late) }),
	)
}

// farBackStore is a store that answers check-ins far back in a line from
// its view of the room (the Redis store).
type farBackStore interface {
	FarBackStats() redis.FarBackStats
}

// registerFarBackMetrics adds the counts of check-ins far back in a line
// answered without a store call of their own, when the store does that.
func registerFarBackMetrics(m *admin.Metrics, store any) {
	fb, ok := store.(farBackStore)
	if !ok {
		return
	}
	counter := func(name, help string, v func(redis.FarBackStats) int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
			func() float64 { return float64(v(fb.FarBackStats())) })
	}
	m.Registry().MustRegister(
		counter("usher_checkins_far_back_total",
			"Waiters' check-ins far back in a line answered from this node's view of the room, with no Redis call of their own (their moves go in batches).",
			func(s redis.FarBackStats) int64 { return s.Answered }),
		counter("usher_far_back_moves_total",
			"Far-back check-ins' moves applied by batches.",
			func(s redis.FarBackStats) int64 { return s.Moved }),
		counter("usher_far_back_replays_total",
			"Far-back check-ins' moves a batch found to be replays (a copied or replayed ticket's): nothing changed.",
			func(s redis.FarBackStats) int64 { return s.Replays }),
		counter("usher_far_back_dropped_total",
			"Far-back check-ins' moves lost with a batch that failed: their waiters are counted again at their next check-in.",
			func(s redis.FarBackStats) int64 { return s.Dropped }),
		counter("usher_far_back_batches_total",
			"Batch calls applying far-back check-ins' moves.",
			func(s redis.FarBackStats) int64 { return s.Flushes }),
		counter("usher_far_back_view_reads_total",
			"Reads of a room's view (counters and live waiters per bucket), one a second per room while far-back check-ins use it.",
			func(s redis.FarBackStats) int64 { return s.Views }),
		counter("usher_far_back_back_moves_total",
			"Far-back moves applied on the back shards of rooms spread over shards (of usher_far_back_moves_total).",
			func(s redis.FarBackStats) int64 { return s.BackMoved }),
		counter("usher_far_back_refused_total",
			"Far-back moves a back shard refused because the front had taken their bucket in meanwhile: applied on the front.",
			func(s redis.FarBackStats) int64 { return s.Refused }),
		counter("usher_horizon_moves_total",
			"Steps of this node, as the horizon lease's holder, that moved a room's serving horizon on.",
			func(s redis.FarBackStats) int64 { return s.Horizons }),
		counter("usher_horizon_crossings_total",
			"Calls on back shards handing buckets over to their front.",
			func(s redis.FarBackStats) int64 { return s.Crossings }),
	)
}
