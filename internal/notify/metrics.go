package notify

import "github.com/prometheus/client_golang/prometheus"

// collector reports the webhooks' counts and queues, and the stream's, at
// each scrape.
type collector struct{ b *Bus }

var (
	deliveriesDesc = prometheus.NewDesc("usher_webhook_deliveries_total",
		"Webhook events by result: delivered (2xx), failed (every attempt failed), refused (the receiver answered a 4xx other than 408 and 429, or a redirect).",
		[]string{"room", "webhook", "result"}, nil)
	retriesDesc = prometheus.NewDesc("usher_webhook_retries_total",
		"Webhook delivery attempts after the first.", []string{"room", "webhook"}, nil)
	droppedDesc = prometheus.NewDesc("usher_webhook_dropped_total",
		"Webhook events dropped without a try: the queue was full, or the webhook stopped with them queued.",
		[]string{"room", "webhook"}, nil)
	queueDesc = prometheus.NewDesc("usher_webhook_queue_length",
		"Webhook events waiting for delivery.", []string{"room", "webhook"}, nil)
	subscribersDesc = prometheus.NewDesc("usher_stream_subscribers",
		"Subscribers of the admin event stream (GET /api/v1/stream).", nil, nil)
	streamDroppedDesc = prometheus.NewDesc("usher_stream_dropped_total",
		"Event stream subscribers cut off for falling behind.", nil, nil)
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{deliveriesDesc, retriesDesc, droppedDesc, queueDesc, subscribersDesc, streamDroppedDesc} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.b.Stats() {
		for _, r := range []struct {
			result string
			n      int64
		}{{"delivered", s.Delivered}, {"failed", s.Failed}, {"refused", s.Refused}} {
			ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.CounterValue, float64(r.n), s.Room, s.Name, r.result)
		}
		ch <- prometheus.MustNewConstMetric(retriesDesc, prometheus.CounterValue, float64(s.Retries), s.Room, s.Name)
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(s.Dropped), s.Room, s.Name)
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(s.Queued), s.Room, s.Name)
	}
	n, dropped := c.b.StreamStats()
	ch <- prometheus.MustNewConstMetric(subscribersDesc, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(streamDroppedDesc, prometheus.CounterValue, float64(dropped))
}
