package telemetry

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sekgate/gateway/dataplane/meter"
)

// Snapshots reports the node's applied snapshot: its version and signed issue time, and
// whether there is one.
type Snapshots func() (version int64, issued time.Time, ok bool)

var (
	snapVersion = prometheus.NewDesc(Namespace+"_snapshot_version", "Version of the snapshot the node serves (0: none yet).", nil, nil)
	snapAge     = prometheus.NewDesc(Namespace+"_snapshot_age_seconds", "Time since the served snapshot was issued (signed) by the control plane; it is re-issued periodically, so a growing age means the node is not getting new ones.", nil, nil)
)

type snapshotCollector struct {
	s   Snapshots
	now func() time.Time
}

func (c snapshotCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- snapVersion
	ch <- snapAge
}

func (c snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	v, issued, ok := c.s()
	if ok {
		ch <- prometheus.MustNewConstMetric(snapAge, prometheus.GaugeValue, max(c.now().Sub(issued), 0).Seconds())
	}
	ch <- prometheus.MustNewConstMetric(snapVersion, prometheus.GaugeValue, float64(v))
}

// WatchSnapshots registers the snapshot's version and age, read at each scrape, and
// returns the counter of snapshots refused (a syncclient.Config's OnApplyError).
func (m *Metrics) WatchSnapshots(s Snapshots, now func() time.Time) func(error) {
	if now == nil {
		now = time.Now
	}
	m.reg.MustRegister(snapshotCollector{s, now})
	errs := prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "snapshot_apply_errors_total",
		Help: "Snapshots from the control plane or the disk that the node refused (malformed, bad signature or hash, too old, another country's)."})
	m.reg.MustRegister(errs)
	return func(error) { errs.Inc() }
}

// Spool is the usage meter's state (*meter.Meter implements it).
type Spool interface{ Stats() meter.Stats }

var (
	spoolRecords     = prometheus.NewDesc(Namespace+"_spool_records", "Usage records spooled and not yet confirmed by the control plane.", nil, nil)
	spoolBytes       = prometheus.NewDesc(Namespace+"_spool_bytes", "Size of the usage spool's segment files.", nil, nil)
	spoolAge         = prometheus.NewDesc(Namespace+"_spool_oldest_age_seconds", "How long the oldest unconfirmed usage record has waited (0: none).", nil, nil)
	usageRecords     = prometheus.NewDesc(Namespace+"_usage_records_total", "Usage records handed to the meter (written to the spool).", nil, nil)
	usageBatches     = prometheus.NewDesc(Namespace+"_usage_batches_total", "Usage batches the control plane confirmed.", nil, nil)
	usageRetries     = prometheus.NewDesc(Namespace+"_usage_retries_total", "Repeated attempts to send a usage batch, each after a failed one (transport error or error status): the batch send errors.", nil, nil)
	usageFsyncs      = prometheus.NewDesc(Namespace+"_spool_fsyncs_total", "Grouped fsyncs of the usage spool.", nil, nil)
	usageInterrupted = prometheus.NewDesc(Namespace+"_usage_interrupted_records_total", "Records rebuilt at start-up from start entries of streams a stopped node left open.", nil, nil)
	usageDeadLetter  = prometheus.NewDesc(Namespace+"_usage_dead_letter_records_total", "Usage records the control plane refused permanently, kept in dead-letter segments.", nil, nil)
)

type spoolCollector struct{ s Spool }

func (c spoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{spoolRecords, spoolBytes, spoolAge, usageRecords, usageBatches, usageRetries,
		usageFsyncs, usageInterrupted, usageDeadLetter} {
		ch <- d
	}
}

func (c spoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s.Stats()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	n := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	g(spoolRecords, float64(s.SpoolRecords))
	g(spoolBytes, float64(s.SpoolBytes))
	g(spoolAge, s.OldestUnconfirmedAge.Seconds())
	n(usageRecords, s.Records)
	n(usageBatches, s.BatchesSent)
	n(usageRetries, s.Retries)
	n(usageFsyncs, s.Fsyncs)
	n(usageInterrupted, s.Interrupted)
	n(usageDeadLetter, s.DeadLetters)
}

// WatchSpool registers the usage spool's figures, read at each scrape, and returns the
// observer of batch deliveries (a meter.Config's OnBatch).
func (m *Metrics) WatchSpool(s Spool) func(records int, took time.Duration) {
	m.reg.MustRegister(spoolCollector{s})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "usage_batch_send_duration_seconds",
		Help: "Time from a usage batch's first send until the control plane confirmed it, retries included.", Buckets: BatchBuckets})
	m.reg.MustRegister(h)
	return func(_ int, took time.Duration) { h.Observe(took.Seconds()) }
}

// Breakers lists the routes' circuit-breaker states (*routing.Health implements it).
type Breakers interface {
	EachState(fn func(route, state string))
}

var breakerState = prometheus.NewDesc(Namespace+"_route_breaker_state",
	"Circuit-breaker state per route: 0 closed, 1 half-open, 2 open (a route ID with several base URLs reports its worst).",
	[]string{"route"}, nil)

type breakerCollector struct{ b Breakers }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerState }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	worst := map[string]float64{}
	c.b.EachState(func(route, state string) {
		v := 0.0
		switch state {
		case "half-open":
			v = 1
		case "open":
			v = 2
		}
		if old, ok := worst[route]; !ok || v > old {
			worst[route] = v
		}
	})
	for r, v := range worst {
		ch <- prometheus.MustNewConstMetric(breakerState, prometheus.GaugeValue, v, r)
	}
}

// WatchBreakers registers the routes' breaker states, read at each scrape.
func (m *Metrics) WatchBreakers(b Breakers) { m.reg.MustRegister(breakerCollector{b}) }

// WatchAccessLog registers the count of access-log lines dropped because the log's
// destination fell behind (dropped: accesslog.Log's Dropped), read at each scrape.
func (m *Metrics) WatchAccessLog(dropped func() int64) {
	m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: Namespace, Name: "access_log_dropped_lines_total",
		Help: "Access-log lines dropped because the log's destination took nothing while 8 MiB of lines waited."},
		func() float64 { return float64(dropped()) }))
}
