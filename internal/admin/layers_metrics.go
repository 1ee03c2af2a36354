package admin

import "github.com/prometheus/client_golang/prometheus"

// RegisterLayers adds the runtime document's metrics: the version in force
// on this node (equal on every node once a change has reached them all)
// and how many room fields are set at runtime.
func (m *Metrics) RegisterLayers(l *Layers) {
	if m == nil || l == nil {
		return
	}
	m.registry.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "usher_runtime_version",
			Help: "Version of the runtime overrides in force on this node (0: none).",
		}, func() float64 {
			if s := l.Current(); s != nil {
				return float64(s.Version)
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "usher_runtime_overrides",
			Help: "Room fields set at runtime, over the config file.",
		}, func() float64 {
			n := 0
			if s := l.Current(); s != nil && s.Runtime != nil {
				for _, ov := range s.Runtime.Rooms {
					n += len(ov)
				}
			}
			return float64(n)
		}),
	)
}
