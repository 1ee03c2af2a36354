package admin

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/usherhq/usher"
)

const (
	// scrapeStatusTimeout bounds one room's status call during a scrape.
	scrapeStatusTimeout = 2 * time.Second
	// scrapeParallelism is the most status calls in flight in one scrape.
	scrapeParallelism = 8
)

// statusCollector reports each room's live counters and limits at scrape
// time. A room whose status call fails counts an error and reports no
// gauges in that scrape.
type statusCollector struct {
	rooms  func() []*usher.Room
	status StatusFunc
	now    func() time.Time

	active    *prometheus.Desc
	waiting   *prometheus.Desc
	admitted  *prometheus.Desc
	slots     *prometheus.Desc
	limitTAU  *prometheus.Desc
	limitNUPM *prometheus.Desc
	abandoned *prometheus.Desc
	errors    *prometheus.CounterVec
	// lapsed, when set, reads a room's lapsed waiters for abandoned.
	lapsed atomic.Pointer[LapsedFunc]
}

var _ prometheus.Collector = (*statusCollector)(nil)

func newStatusCollector(rooms func() []*usher.Room, status StatusFunc, now func() time.Time) *statusCollector {
	gauge := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"room"}, nil)
	}
	return &statusCollector{
		rooms:     rooms,
		status:    status,
		now:       now,
		active:    gauge("usher_active_users", "Admitted visitors whose session is running."),
		waiting:   gauge("usher_waiting_users", "Live waiters in the queue."),
		admitted:  gauge("usher_admitted_last_minute", "Admissions in the last 60 seconds."),
		slots:     gauge("usher_free_slots", "Visitors that could be admitted now."),
		limitTAU:  gauge("usher_limit_total_active_users", "The room's total_active_users setting."),
		limitNUPM: gauge("usher_limit_new_users_per_minute", "The room's new_users_per_minute setting."),
		abandoned: prometheus.NewDesc("usher_abandoned_waiters_total",
			"Waiters whose place lapsed (they stopped checking in), as the store counts them: shared by every node on one store (take max across nodes, not sum); starts again from zero when the store loses the room's counters.",
			[]string{"room"}, nil),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "usher_status_errors_total",
			Help: "Room status calls that failed during a scrape.",
		}, []string{"room"}),
	}
}

// Describe implements prometheus.Collector.
func (c *statusCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.active, c.waiting, c.admitted, c.slots, c.limitTAU, c.limitNUPM, c.abandoned} {
		ch <- d
	}
	c.errors.Describe(ch)
}

// Collect implements prometheus.Collector. It calls status for every room,
// a few at a time, each with its own timeout.
func (c *statusCollector) Collect(ch chan<- prometheus.Metric) {
	now := c.now()
	sem := make(chan struct{}, scrapeParallelism)
	var wg sync.WaitGroup
	for _, room := range c.rooms() {
		if room == nil {
			continue
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c.collectRoom(ch, room, now)
		})
	}
	wg.Wait()
	// The error counter goes out last, so that this scrape's errors are in
	// it.
	c.errors.Collect(ch)
}

func (c *statusCollector) collectRoom(ch chan<- prometheus.Metric, room *usher.Room, now time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeStatusTimeout)
	defer cancel()
	stats, err := c.status(ctx, room, now)
	if err != nil {
		c.errors.WithLabelValues(room.ID).Inc()
		return
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, room.ID)
	}
	gauge(c.active, float64(stats.Active))
	gauge(c.waiting, float64(stats.Waiting))
	gauge(c.admitted, float64(stats.AdmittedLastMinute))
	gauge(c.slots, float64(stats.Slots))
	if fn := c.lapsed.Load(); fn != nil {
		if n, err := (*fn)(ctx, room.ID, now); err == nil {
			ch <- prometheus.MustNewConstMetric(c.abandoned, prometheus.CounterValue, float64(n), room.ID)
		} else {
			c.errors.WithLabelValues(room.ID).Inc()
		}
	}
	set := room.At(now).Settings // a running event's limits over the room's
	gauge(c.limitTAU, float64(set.TotalActiveUsers))
	gauge(c.limitNUPM, float64(set.NewUsersPerMinute))
}
