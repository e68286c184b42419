// Command dataplane runs a data-plane node: the public listener of the gateway. Every flag
// can also be set with an environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/sekgate/gateway/cmd/internal/daemon"
	"github.com/sekgate/gateway/cmd/internal/flagenv"
	"github.com/sekgate/gateway/cmd/internal/version"
	"github.com/sekgate/gateway/dataplane/catalog"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/opsapi"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/syncclient"
	"github.com/sekgate/gateway/shared/snapshot"
)

type options struct {
	listen, controlPlaneURL, nodeToken, nodeID, dataDir, logLevel, docsURL, opsListen string
	snapshotWait, batchInterval                                                       time.Duration
	// Routing, failover, upstream and limits settings (issue 5).
	upstream        proxy.Config
	breaker         routing.HealthConfig
	maxAttempts     int
	requestTimeout  time.Duration
	limitShareNodes int
}

func parseFlags(args []string) (options, error) {
	var o options
	host, _ := os.Hostname()
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "public listen address")
	fs.StringVar(&o.controlPlaneURL, "control-plane-url", "http://127.0.0.1:8081", "control plane base URL")
	fs.StringVar(&o.nodeToken, "node-token", "", "token authenticating this node to the control plane (required)")
	fs.StringVar(&o.nodeID, "node-id", host, "name of this node")
	fs.StringVar(&o.dataDir, "data-dir", ".data/dataplane", "directory for the last-known-good snapshot and the usage spool")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.opsListen, "ops-listen", "", "private address for GET /metrics (Prometheus) and GET /readyz; empty: off")
	fs.StringVar(&o.docsURL, "docs-url", "", "public reference that GET /docs redirects to and 501 answers link (default: this gateway's /openapi.json)")
	fs.DurationVar(&o.snapshotWait, "snapshot-wait", 30*time.Second, "long-poll wait for snapshot changes")
	fs.DurationVar(&o.batchInterval, "usage-batch-interval", 200*time.Millisecond, "longest wait before a usage batch is sent")
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
	if err := flagenv.Parse(fs, args, "GATEWAY_", nil); err != nil {
		return o, err
	}
	if o.nodeToken == "" {
		return o, errors.New("--node-token (GATEWAY_NODE_TOKEN) is required")
	}
	if o.nodeID == "" {
		o.nodeID = "dataplane"
	}
	if o.limitShareNodes < 1 {
		return o, errors.New("--limit-share-nodes must be at least 1")
	}
	return o, nil
}

func main() {
	if version.Requested(os.Args[1:]) {
		version.Print(os.Stdout, "dataplane")
		return
	}
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataplane:", err)
		os.Exit(2)
	}
	daemon.Run("dataplane", o.logLevel, func(ctx context.Context, log *slog.Logger) error { return run(ctx, o, log) })
}

func run(ctx context.Context, o options, log *slog.Logger) error {
	store := &catalog.Store{}
	usageMeter, err := meter.New(meter.Config{
		DataDir: o.dataDir, ControlPlaneURL: o.controlPlaneURL, NodeID: o.nodeID, NodeToken: o.nodeToken,
		BatchInterval: o.batchInterval, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("open usage spool: %w", err)
	}
	defer func() {
		if err := usageMeter.Close(); err != nil {
			log.Error("close usage spool", "err", err)
		}
	}()
	limiter := limits.New(limits.Config{ShareNodes: o.limitShareNodes})
	syncer, err := syncclient.New(syncclient.Config{
		ControlPlaneURL: o.controlPlaneURL, NodeToken: o.nodeToken, NodeID: o.nodeID, DataDir: o.dataDir,
		Store: store, Wait: o.snapshotWait, Logger: log,
		OnSnapshot: func(s *snapshot.Snapshot) {
			usageMeter.SeedBalances(s.Balances, s.BalanceSeq)
			limiter.Retain(s)
		},
	})
	if err != nil {
		return err
	}
	if _, err := syncer.LoadDisk(); err != nil {
		log.Warn("no usable last-known-good snapshot", "err", err)
	}
	requestMetrics := metrics.NewSet()
	metrics.RegisterSet(requestMetrics) // served by the ops listener's /metrics
	defer metrics.UnregisterSet(requestMetrics, true)
	srv, err := server.New(server.Config{
		Metrics: requestMetrics,
		Store:   store, Meter: usageMeter, Pool: proxy.NewPool(o.upstream),
		Health:      routing.NewHealth(withLogger(o.breaker, log)),
		Limiter:     limiter,
		MaxAttempts: o.maxAttempts, RequestTimeout: o.requestTimeout,
		ControlPlaneURL: o.controlPlaneURL, NodeToken: o.nodeToken, NodeID: o.nodeID, DocsURL: o.docsURL, Logger: log,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.listen, err)
	}
	log.Info("data plane listening", "addr", ln.Addr().String(), "node", o.nodeID, "ready", store.Ready())

	syncDone := make(chan error, 1)
	go func() { syncDone <- syncer.Run(ctx) }()
	meterDone := make(chan error, 1)
	go func() { meterDone <- usageMeter.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	if o.opsListen != "" {
		ops := &http.Server{Addr: o.opsListen, Handler: opsapi.Handler(storeVersion{store}), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := ops.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("operator endpoints stopped", "addr", o.opsListen, "err", err)
			}
		}()
		defer ops.Close()
		log.Info("operator endpoints listening", "addr", o.opsListen)
	}

	select {
	case <-ctx.Done():
	case err := <-serveDone:
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("shutting down")
	shutdown := make(chan error, 1)
	go func() { shutdown <- srv.Shutdown() }()
	select {
	case err := <-shutdown:
		if err != nil {
			return fmt.Errorf("shutdown: %w", err)
		}
	case <-time.After(30 * time.Second):
		log.Warn("shutdown timed out with requests still open")
	}
	<-syncDone
	if err := <-meterDone; err != nil {
		log.Error("usage sender stopped", "err", err)
	}
	return nil
}

// storeVersion reports the applied snapshot's version for readiness and metrics.
type storeVersion struct{ s *catalog.Store }

func (v storeVersion) Version() (int64, bool) {
	if x := v.s.Load(); x != nil {
		return x.Version(), true
	}
	return 0, false
}

func withLogger(c routing.HealthConfig, log *slog.Logger) routing.HealthConfig {
	c.Logger = log
	return c
}
