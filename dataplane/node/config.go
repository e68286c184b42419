// Command dataplane runs a data-plane node: the public listener of the gateway. Every flag
// can also be set with an environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>.
package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/internal/version"
)

type options struct {
	listen, controlPlaneURL, nodeToken, nodeID, dataDir, logLevel, docsURL, opsListen string
	snapshotWait, batchInterval                                                       time.Duration
	// The usage spool (dataplane/meter): records per batch and the fsync grouping window.
	batchSize   int
	fsyncWindow time.Duration
	// Routing, failover, upstream and limits settings (issue 5).
	upstream        proxy.Config
	breaker         routing.HealthConfig
	maxAttempts     int
	requestTimeout  time.Duration
	limitShareNodes int
	// Public edge (issue 12).
	edge           server.Config
	trustedProxies string
	// Link to the control plane (issue 12): signatures, max age, TLS, token file.
	link linkOptions
	// Graceful shutdown (issue 14, shutdown.go).
	shutdown shutdownOptions
	// Where the node runs (issue 14, region.go).
	region     regionOptions
	regionURLs map[string]string
	// Access log and tracing (issue 15, observe.go).
	observe observeOptions
}

func parseFlags(args []string) (options, error) {
	var o options
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "public listen address")
	fs.StringVar(&o.controlPlaneURL, "control-plane-url", "http://127.0.0.1:8081", "control plane base URL")
	fs.StringVar(&o.nodeToken, "node-token", "", "token authenticating this node to the control plane, at least 32 bytes (or --node-token-file)")
	fs.StringVar(&o.nodeID, "node-id", host, "name of this node")
	fs.StringVar(&o.dataDir, "data-dir", ".data/dataplane", "directory for the last-known-good snapshot and the usage spool")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.opsListen, "ops-listen", "", "private address for GET /metrics (Prometheus) and GET /readyz; empty: off")
	fs.StringVar(&o.docsURL, "docs-url", "", "public reference that GET /docs redirects to and 501 answers link (default: this gateway's /openapi.json)")
	fs.DurationVar(&o.snapshotWait, "snapshot-wait", 30*time.Second, "long-poll wait for snapshot changes")
	fs.DurationVar(&o.batchInterval, "usage-batch-interval", 200*time.Millisecond, "longest wait before a usage batch is sent")
	fs.IntVar(&o.batchSize, "usage-batch-size", meter.DefaultBatchSize, "most usage records per batch sent to the control plane (1 to 10000)")
	fs.DurationVar(&o.fsyncWindow, "spool-fsync-window", meter.DefaultFsyncWindow, "how long written usage records wait to be fsynced together; bounds what a power loss can take (a process crash takes nothing); 0: fsync at once")
	fs.IntVar(&o.limitShareNodes, "limit-share-nodes", 1, "number of data-plane nodes sharing the deployment's rate and concurrency limits; each node enforces 1/N of every limit (1: each node the full limit)")
	fs.IntVar(&o.maxAttempts, "max-attempts", 3, "routes one request tries before its first byte reaches the client")
	fs.DurationVar(&o.requestTimeout, "request-timeout", 10*time.Minute, "total deadline of one request, failover and streaming included")
	fs.IntVar(&o.upstream.MaxConnsPerUpstream, "upstream-max-conns", 1024, "connections per upstream (a route's max_conns overrides)")
	fs.DurationVar(&o.upstream.ConnectTimeout, "upstream-connect-timeout", 5*time.Second, "upstream connect timeout (route connect_timeout_ms overrides)")
	fs.DurationVar(&o.upstream.FirstByteTimeout, "upstream-first-byte-timeout", 60*time.Second, "wait for a stream's first response byte (route first_byte_timeout_ms overrides)")
	fs.DurationVar(&o.upstream.IdleTimeout, "upstream-idle-timeout", 60*time.Second, "longest silence between stream chunks (route idle_timeout_ms overrides)")
	fs.DurationVar(&o.upstream.TotalTimeout, "upstream-total-timeout", 10*time.Minute, "one upstream exchange, streams included (route total_timeout_ms overrides)")
	fs.IntVar(&o.breaker.ConsecutiveFailures, "breaker-failures", 5, "consecutive failures that open a route's circuit breaker")
	fs.DurationVar(&o.breaker.OpenFor, "breaker-open", 10*time.Second, "how long an open breaker skips its route before a probe")
	fs.DurationVar(&o.edge.HeaderTimeout, "header-timeout", 10*time.Second, "longest time to receive a request's line and headers (from the connection's accept or the request's first byte)")
	fs.DurationVar(&o.edge.BodyIdleTimeout, "body-idle-timeout", 10*time.Second, "longest wait for request body bytes (and for a body of up to 8 KiB, or a longer one's first byte, after its headers)")
	fs.IntVar(&o.edge.MinBodyRate, "min-body-rate", 4096, "lowest average request-body rate in bytes/s once a body takes longer than --body-idle-timeout (negative: off)")
	fs.DurationVar(&o.edge.IdleTimeout, "keepalive-timeout", 60*time.Second, "longest idle time of a keep-alive client connection between requests")
	fs.DurationVar(&o.edge.WriteTimeout, "write-timeout", 30*time.Second, "longest wait of one write to a client (answers and each stream flush): a client that stops reading is cut and its upstream request cancelled")
	fs.IntVar(&o.edge.MaxHeaderBytes, "max-header-bytes", 8192, "largest request line plus headers; larger requests get 431")
	fs.IntVar(&o.edge.MaxConns, "max-conns", 10000, "open client connections in total; more are answered 503 and closed (negative: no cap)")
	fs.IntVar(&o.edge.MaxConnsPerAddr, "max-conns-per-addr", 100, "open client connections per client address (IPv4 address or IPv6 /64; trusted proxies exempt); more are answered 429 and closed (negative: no cap)")
	fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs of proxies in front of the node whose X-Forwarded-For names the client (default none: the TCP peer is the client)")
	o.link.register(fs)
	o.shutdown.register(fs)
	o.region.register(fs)
	o.observe.register(fs)
	if err := flagenv.Parse(fs, args, "GATEWAY_", nil); err != nil {
		return o, err
	}
	if err := o.link.validate(&o); err != nil {
		return o, err
	}
	if o.nodeID == "" {
		o.nodeID = "dataplane"
	}
	tp, err := edge.ParseProxies(o.trustedProxies)
	if err != nil {
		return o, fmt.Errorf("--trusted-proxies: %w", err)
	}
	o.edge.TrustedProxies = tp
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header-timeout", o.edge.HeaderTimeout}, {"body-idle-timeout", o.edge.BodyIdleTimeout}, {"keepalive-timeout", o.edge.IdleTimeout}, {"write-timeout", o.edge.WriteTimeout}} {
		if d.v <= 0 {
			return o, fmt.Errorf("--%s must be positive", d.name)
		}
	}
	if o.edge.MaxHeaderBytes < 1024 {
		return o, errors.New("--max-header-bytes must be at least 1024")
	}
	if err := o.region.validate(); err != nil {
		return o, err
	}
	if o.regionURLs, err = parseRegionURLs(o.region.regionURLs); err != nil {
		return o, err
	}
	if o.shutdown.delay < 0 || o.shutdown.drainTimeout <= 0 || o.shutdown.flushTimeout <= 0 {
		return o, errors.New("--shutdown-delay must not be negative, --drain-timeout and --shutdown-flush-timeout must be positive")
	}
	if err := o.observe.validate(); err != nil {
		return o, err
	}
	if o.batchSize < 1 || o.batchSize > meter.MaxBatchSize {
		return o, fmt.Errorf("--usage-batch-size must be between 1 and %d", meter.MaxBatchSize)
	}
	if o.fsyncWindow < 0 || o.fsyncWindow > time.Second {
		return o, errors.New("--spool-fsync-window must be between 0 and 1s")
	}
	if o.batchInterval <= 0 {
		return o, errors.New("--usage-batch-interval must be positive")
	}
	if o.limitShareNodes < 1 {
		return o, errors.New("--limit-share-nodes must be at least 1")
	}
	return o, nil
}

// Main runs the dataplane command with its arguments (args) and exits the process
// with its status.
func Main(args []string) {
	if version.Requested(args) {
		version.Print(os.Stdout, "dataplane")
		return
	}
	o, err := parseFlags(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataplane:", err)
		os.Exit(2)
	}
	daemon.Run("dataplane", o.logLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, o, log) })
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	n := &node{o: o, log: log, store: &index.Store{}, tel: telemetry.New()}
	defer n.close()
	for _, step := range []func() error{n.openLink, n.openMeter, n.openSync, n.newServer} {
		if err := step(); err != nil {
			return err
		}
	}
	return n.serve(ctx)
}

// storeVersion reports the applied snapshot's version for readiness and metrics.
type storeVersion struct{ s *index.Store }

func (v storeVersion) Version() (int64, bool) {
	if x := v.s.Load(); x != nil {
		return x.Version(), true
	}
	return 0, false
}

// issued reports the applied snapshot's version and issue time for metrics.
func (v storeVersion) issued() (int64, time.Time, bool) {
	if x := v.s.Load(); x != nil {
		return x.Version(), x.Snapshot.IssuedAt, true
	}
	return 0, time.Time{}, false
}

// spoolStats hands the meter's figures to metrics once the meter exists (the meter takes
// the metrics' batch observer when it is created).
type spoolStats struct{ m atomic.Pointer[meter.Meter] }

func (s *spoolStats) Stats() meter.Stats {
	if m := s.m.Load(); m != nil {
		return m.Stats()
	}
	return meter.Stats{}
}

func withLogger(c routing.HealthConfig, log *slog.Logger) routing.HealthConfig {
	c.Logger = log
	return c
}
