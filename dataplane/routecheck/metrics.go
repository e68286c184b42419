package routecheck

import "github.com/prometheus/client_golang/prometheus"

var problemDesc = prometheus.NewDesc("gateway_route_problem",
	"Routes this node cannot use because of their configuration (1 per route and problem: credential_missing, unreachable, tls, unauthorized).",
	[]string{"route", "problem"}, nil)

// Collector exports the current route problems as gateway_route_problem.
func (c *Checker) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Checker }

func (x collector) Describe(ch chan<- *prometheus.Desc) { ch <- problemDesc }

func (x collector) Collect(ch chan<- prometheus.Metric) {
	for route, p := range x.c.Problems() {
		ch <- prometheus.MustNewConstMetric(problemDesc, prometheus.GaugeValue, 1, route, p)
	}
}
