package opsmetrics

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sekgate/gateway/controlplane/store"
)

// WatchPool registers a collector reading the pool's statistics at each scrape.
func (m *Metrics) WatchPool(p *pgxpool.Pool) { m.reg.MustRegister(poolCollector{p}) }

var (
	poolAcquired = prometheus.NewDesc(Namespace+"_db_pool_acquired_conns", "Connections in use.", nil, nil)
	poolIdle     = prometheus.NewDesc(Namespace+"_db_pool_idle_conns", "Idle connections.", nil, nil)
	poolTotal    = prometheus.NewDesc(Namespace+"_db_pool_total_conns", "Open connections (acquired, idle and being built).", nil, nil)
	poolMax      = prometheus.NewDesc(Namespace+"_db_pool_max_conns", "The pool's connection limit (--max-conns).", nil, nil)
	poolAcquires = prometheus.NewDesc(Namespace+"_db_pool_acquires_total", "Connections acquired from the pool.", nil, nil)
	poolEmpty    = prometheus.NewDesc(Namespace+"_db_pool_empty_acquires_total", "Acquires that had to wait for a connection (none idle).", nil, nil)
	poolWait     = prometheus.NewDesc(Namespace+"_db_pool_acquire_wait_seconds_total", "Time spent waiting to acquire connections.", nil, nil)
)

type poolCollector struct{ p *pgxpool.Pool }

func (c poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolAcquired, poolIdle, poolTotal, poolMax, poolAcquires, poolEmpty, poolWait} {
		ch <- d
	}
}

func (c poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stat()
	ch <- prometheus.MustNewConstMetric(poolAcquired, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolTotal, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolAcquires, prometheus.CounterValue, float64(s.AcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolEmpty, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, s.AcquireDuration().Seconds())
}

// NodeLister lists the known nodes (*store.Store implements it).
type NodeLister interface {
	ListNodes(ctx context.Context) ([]store.Node, error)
}

// NodesConfig configures WatchNodes.
type NodesConfig struct {
	// Nodes lists the nodes. Required.
	Nodes NodeLister
	// Current returns the version of the snapshot this control plane serves and whether
	// there is one. Required.
	Current func() (int64, bool)
	// Window: only nodes that polled within it are exported (default 1 h), so nodes that
	// went away leave the label set.
	Window time.Duration
	// Timeout bounds the query at each scrape (default 2 s).
	Timeout time.Duration
	// Logger receives query errors (default slog.Default()); Now is the clock.
	Logger *slog.Logger
	Now    func() time.Time
}

var (
	nodeApplied  = prometheus.NewDesc(Namespace+"_node_applied_snapshot_version", "Snapshot version the node last acknowledged applying.", []string{"node"}, nil)
	nodeLag      = prometheus.NewDesc(Namespace+"_node_snapshot_lag", "Versions the node is behind the current snapshot (0: up to date).", []string{"node"}, nil)
	nodeSeen     = prometheus.NewDesc(Namespace+"_node_last_seen_timestamp_seconds", "When the node last polled for a snapshot (Unix time).", []string{"node"}, nil)
	nodeSpoolAge = prometheus.NewDesc(Namespace+"_node_spool_age_seconds", "How long the oldest record in the node's usage spool had waited for confirmation when the node last reported it (0: empty; absent: never reported).", []string{"node"}, nil)
	nodeInfo     = prometheus.NewDesc(Namespace+"_node_info", "1 per node, naming the region it reported (empty: none); join on node to see the other node figures by region.", []string{"node", "region"}, nil)
	nodesUp      = prometheus.NewDesc(Namespace+"_nodes", "Nodes that polled within the window.", nil, nil)
	nodeScrapeOK = prometheus.NewDesc(Namespace+"_node_scrape_success", "1 when the node list could be read at this scrape, else 0.", nil, nil)
)

// WatchNodes registers a collector that reads the node list at each scrape.
func (m *Metrics) WatchNodes(cfg NodesConfig) {
	if cfg.Window <= 0 {
		cfg.Window = time.Hour
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	m.reg.MustRegister(nodeCollector{cfg})
}

type nodeCollector struct{ cfg NodesConfig }

func (c nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{nodeApplied, nodeLag, nodeSeen, nodeSpoolAge, nodeInfo, nodesUp, nodeScrapeOK} {
		ch <- d
	}
}

func (c nodeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	nodes, err := c.cfg.Nodes.ListNodes(ctx)
	if err != nil {
		c.cfg.Logger.Warn("metrics: list nodes", "err", err)
		ch <- prometheus.MustNewConstMetric(nodeScrapeOK, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(nodeScrapeOK, prometheus.GaugeValue, 1)
	cur, haveCur := c.cfg.Current()
	since := c.cfg.Now().Add(-c.cfg.Window)
	n := 0
	for _, nd := range nodes {
		if nd.LastSeen.Before(since) {
			continue
		}
		n++
		ch <- prometheus.MustNewConstMetric(nodeApplied, prometheus.GaugeValue, float64(nd.AppliedVersion), nd.NodeID)
		ch <- prometheus.MustNewConstMetric(nodeInfo, prometheus.GaugeValue, 1, nd.NodeID, nd.Region)
		ch <- prometheus.MustNewConstMetric(nodeSeen, prometheus.GaugeValue, float64(nd.LastSeen.UnixNano())/1e9, nd.NodeID)
		if !nd.SpoolReportedAt.IsZero() {
			ch <- prometheus.MustNewConstMetric(nodeSpoolAge, prometheus.GaugeValue, nd.SpoolAge.Seconds(), nd.NodeID)
		}
		if haveCur {
			ch <- prometheus.MustNewConstMetric(nodeLag, prometheus.GaugeValue, float64(max(0, cur-nd.AppliedVersion)), nd.NodeID)
		}
	}
	ch <- prometheus.MustNewConstMetric(nodesUp, prometheus.GaugeValue, float64(n))
}
