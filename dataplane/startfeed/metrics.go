package startfeed

import "github.com/prometheus/client_golang/prometheus"

// Collectors are the feed's metrics.
func (f *Feed) Collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gateway_start_feed_live",
			Help: "1 while this node hears every live node of the fleet on the start feed (and takes the servers' free slots as one node alone), else 0."},
			func() float64 {
				if f.Live() {
					return 1
				}
				return 0
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gateway_start_feed_events_heard_total",
			Help: "Other nodes' request starts and ends heard on the start feed."},
			func() float64 { return float64(f.heard.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "gateway_start_feed_events_dropped_total",
			Help: "This node's starts, ends and heartbeats not published (the connection was closed)."},
			func() float64 { return float64(f.dropped.Load()) }),
	}
}
