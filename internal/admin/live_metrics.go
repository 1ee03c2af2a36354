package admin

import "github.com/prometheus/client_golang/prometheus"

var (
	liveSubscribersDesc = prometheus.NewDesc("usher_live_subscribers",
		"Open live streams of the dashboard (GET /api/v1/live).", nil, nil)
	liveDroppedDesc = prometheus.NewDesc("usher_live_dropped_total",
		"Live stream subscribers dropped for falling behind.", nil, nil)
)

// liveCollector reports the live streams at each scrape.
type liveCollector struct{ l *liveHub }

var _ prometheus.Collector = (*liveCollector)(nil)

func (c *liveCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- liveSubscribersDesc
	ch <- liveDroppedDesc
}

func (c *liveCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(liveSubscribersDesc, prometheus.GaugeValue, float64(c.l.count()))
	ch <- prometheus.MustNewConstMetric(liveDroppedDesc, prometheus.CounterValue, float64(c.l.drops.Load()))
}
