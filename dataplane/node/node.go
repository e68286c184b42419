package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/dataplane/discovery"
	"github.com/sekgate/gateway/dataplane/fairq"
	"github.com/sekgate/gateway/dataplane/fleetshare"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/limits"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/opsapi"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/refusals"
	"github.com/sekgate/gateway/dataplane/routecheck"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/scrape"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/startfeed"
	"github.com/sekgate/gateway/dataplane/syncclient"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/shared/snapshot"
)

// node is a data-plane node's parts, built by run's steps in order and closed in reverse.
type node struct {
	o     Config
	log   *slog.Logger
	store *index.Store
	tel   *telemetry.Metrics

	link      *cplink.Client
	meter     *meter.Meter
	limiter   *limits.Limiter
	health    *breakerReport
	syncer    *syncclient.Client
	srv       *server.Server
	scraper   *scrape.Scraper // the model servers' reported load
	fairq     *fairq.Queue    // requests held while every route is saturated
	pool      *proxy.Pool
	creds     *routecheck.Credentials // route credentials: environment and --credentials-file
	checker   *routecheck.Checker     // routes this node cannot use because of their configuration
	refusals  *refusals.Counter       // requests refused before routing, reported for operators
	fleet     *fleetshare.Exchange    // the limits' fleet shares and known capacities (nil: off)
	feed      *startfeed.Feed         // the other nodes' starts as they happen (nil: off)
	discovery *discovery.Discoverer   // the replicas of routes discovered from DNS
	loads     *loadstat.Registry      // the routes' load, read by the scraper

	closers []func()
}

// close undoes the steps that ran, last first.
func (n *node) close() {
	for i := len(n.closers) - 1; i >= 0; i-- {
		n.closers[i]()
	}
}

// openLink builds the node's one TLS configuration, transport and link to its control
// plane: the snapshot poll, usage batches, balance watch and forwarded account paths all
// go over it, with one retry and backoff policy.
func (n *node) openLink() error {
	cpTLS, err := n.o.Link.clientTLS(n.log)
	if err != nil {
		return err
	}
	cpTr := cpTransport(cpTLS)
	n.closers = append(n.closers, cpTr.CloseIdleConnections)
	n.link, err = cplink.New(cplink.Config{URL: n.o.ControlPlaneURL, NodeID: n.o.NodeID, NodeToken: n.o.NodeToken.Reveal(), Transport: cpTr})
	return err
}

// fsyncWindow maps the flag (0: fsync at once) to meter.Config's (0: default, negative:
// no wait).
func fsyncWindow(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// openMeter opens the usage spool.
func (n *node) openMeter() error {
	var spool spoolStats
	m, err := meter.New(meter.Config{
		DataDir: n.o.DataDir, Link: n.link,
		Country: n.o.Region.Country, BatchInterval: n.o.BatchInterval, BatchSize: n.o.BatchSize,
		FsyncWindow: fsyncWindow(n.o.FsyncWindow), Logger: n.log,
		OnBatch: n.tel.WatchSpool(&spool),
	})
	if err != nil {
		return fmt.Errorf("open usage spool: %w", err)
	}
	spool.m.Store(m)
	n.meter = m
	n.closers = append(n.closers, func() {
		if err := m.Close(); err != nil {
			n.log.Error("close usage spool", "err", err)
		}
	})
	return nil
}

// openSync builds the snapshot sync and loads the last-known-good snapshot from disk.
func (n *node) openSync() error {
	o := n.o
	n.limiter = limits.New(limits.Config{ShareNodes: o.LimitShareNodes})
	pub, err := o.Link.publicKey()
	if err != nil {
		return err
	}
	if pub == nil {
		n.log.Warn("snapshot signatures are NOT verified (--insecure-unsigned-snapshots)")
	}
	n.health = &breakerReport{}
	if n.creds, err = routecheck.NewCredentials(o.CredentialsFile, nil, nil); err != nil {
		return err
	}
	n.checker = routecheck.New(routecheck.Config{
		Routes: func() []snapshot.Route {
			if x := n.store.Load(); x != nil {
				return x.Served() // each replica of a discovered route checked as a route
			}
			return nil
		},
		Credentials:       n.creds,
		OnProblemsChanged: func() { n.syncer.Wake() }, // the control plane learns at once
		OnCredentialsChanged: func() {
			if n.pool != nil {
				n.pool.Refresh()
			}
		},
		Logger: n.log,
	})
	n.tel.Registry().MustRegister(n.checker.Collector())
	n.syncer, err = syncclient.New(syncclient.Config{
		Link: n.link, DataDir: o.DataDir,
		Store: n.store, Wait: o.SnapshotWait, Logger: n.log,
		PublicKey: pub, AllowUnsigned: o.Link.InsecureUnsigned, MaxAge: o.Link.syncMaxAge(), Country: o.Region.Country, Region: o.Region.Region,
		SpoolAge:      func() time.Duration { return n.meter.Stats().OldestUnconfirmedAge },
		Breakers:      n.health.notClosed,
		RouteProblems: n.checker.Problems,
		Credentials:   n.creds.Names,
		OnApplyError:  n.tel.WatchSnapshots(storeVersion{n.store}.issued, nil),
		OnSnapshot: func(s *snapshot.Snapshot) {
			n.meter.SeedBalances(s.Balances, s.BalanceSeq)
			n.meter.SeedSpent(s.Spent, s.BalanceSeq)
			n.limiter.Retain(s)
			n.checker.Trigger()
			n.discovery.Wake() // resolve a new snapshot's discovered routes at once
			n.retainReplicas()
		},
		// The accounts' cache salts are keyed by the node token: no other secret is shared
		// by the nodes of a deployment (docs/security.md, tenant cache isolation).
		CacheSaltKey: index.SaltKey(o.NodeToken.Reveal()),
		Build: func(s *snapshot.Snapshot) (*index.Index, error) {
			return index.BuildReplicas(s, index.SaltKey(o.NodeToken.Reveal()), n.discovery.Replicas())
		},
	})
	if err != nil {
		return err
	}
	if _, err := n.syncer.LoadDisk(); err != nil {
		n.log.Warn("no usable last-known-good snapshot; not ready until the control plane answers", "err", err)
	}
	return nil
}

// openFleet builds the fleet exchange (--fleet-interval): the limiter's shares, the
// capacities of the selector's routes and the fair queue's fleet-wide flows.
func (n *node) openFleet(sel *routing.Selector) {
	if n.o.FleetInterval <= 0 {
		return
	}
	cfg := fleetshare.Config{Limiter: n.limiter, Interval: n.o.FleetInterval, FallbackNodes: n.o.LimitShareNodes, Logger: n.log,
		Region: n.o.Region.Region,
		Poster: &fleetshare.LinkPoster{Link: n.link, Client: n.link.HTTPClient(n.o.FleetInterval)}}
	if sel != nil && sel.Loads != nil {
		cfg.Capacity = sel.Loads
	}
	if sel != nil {
		cfg.Prefixes = sel
	}
	if n.fairq != nil {
		cfg.Flows = n.fairq
	}
	if n.feed != nil {
		cfg.StartFeed = n.feed.State
	}
	n.fleet = fleetshare.New(cfg)
	if sel != nil && n.fairq != nil {
		sel.Place = n.fairq.Place
	}
	n.tel.Registry().MustRegister(n.fleet.Collectors()...)
}

// openFeed connects the start feed (--start-feed-url): the other nodes' starts and ends
// counted in the selector's loads, and, while every live node is heard, the servers'
// free slots taken as by one node alone.
func (n *node) openFeed(sel *routing.Selector) error {
	if n.o.StartFeedURL == "" || sel == nil || sel.Loads == nil {
		return nil
	}
	f, err := startfeed.OpenFor(startfeed.Config{URL: n.o.StartFeedURL, Subject: n.o.StartFeedSubject,
		Node: n.o.NodeID, Logger: n.log}, startfeed.Node{Selector: sel, Queue: n.fairq})
	if err != nil {
		return err
	}
	n.feed = f
	n.tel.Registry().MustRegister(f.Collectors()...)
	return nil
}

// newServer builds the public edge.
func (n *node) newServer() error {
	o := n.o
	cfg := o.Edge // the public edge's timeouts, caps and trusted proxies
	cfg.Telemetry = n.tel
	access, err := o.Observe.openAccessLog()
	if err != nil {
		return err
	}
	n.closers = append(n.closers, func() { access.Close() })
	cfg.AccessLog = access
	if access != nil {
		n.tel.WatchAccessLog(access.Dropped)
	}
	tracer, err := o.Observe.tracer(o.NodeID, o.Region.Region)
	if err != nil {
		return err
	}
	n.closers = append(n.closers, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tracer.Shutdown(ctx); err != nil {
			n.log.Warn("tracing: spans not sent at shutdown", "err", err)
		}
	})
	cfg.Tracer = tracer
	up := o.Upstream
	up.Getenv = n.creds.Get // route credentials, re-read without a restart (routecheck)
	n.pool = proxy.NewPool(up)
	cfg.Store, cfg.Meter, cfg.Pool = n.store, n.meter, n.pool
	breaker := withLogger(o.Breaker, n.log)
	breaker.OnStateChange = n.tel.BreakerChanged
	cfg.Health = routing.NewHealth(breaker)
	n.health.set(cfg.Health)
	n.tel.WatchBreakers(cfg.Health)
	cfg.Limiter = n.limiter
	cfg.Selector, n.scraper = o.Routing.selector(scrape.Config{Logger: n.log})
	if o.Routing.FairQueue {
		n.fairq = fairq.New(o.Routing.queueConfig())
		n.tel.Registry().MustRegister(n.fairq.Collectors()...)
		cfg.FairQueue = n.fairq
	}
	if err := n.openFeed(cfg.Selector); err != nil {
		return err
	}
	n.openFleet(cfg.Selector)
	n.loads = cfg.Selector.Loads
	n.refusals = refusals.New(nil)
	cfg.Refusals = n.refusals
	cfg.Country, cfg.RegionURLs, cfg.Region = o.Region.Country, o.regionURLs, o.Region.Region
	cfg.Link, cfg.TestBoxToken, cfg.Logger = n.link, o.TestBoxToken.Reveal(), n.log
	n.srv, err = server.New(cfg)
	return err
}

// serve listens, runs the snapshot sync, the usage sender and the operator endpoints, and
// shuts the node down gracefully when ctx ends.
func (n *node) serve(ctx context.Context) error {
	o, log := n.o, n.log
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", o.Listen, err)
	}
	log.Info("data plane listening", "addr", ln.Addr().String(), "node", o.NodeID, "ready", n.store.Ready())

	// Snapshot sync and the usage sender outlive the signal: they run until the node has
	// drained and flushed its spool.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	syncDone := make(chan error, 1)
	go func() { syncDone <- n.syncer.Run(bg) }()
	meterDone := make(chan error, 1)
	go func() { meterDone <- n.meter.Run(bg) }()
	go n.scraper.Run(bg)
	go n.checker.Run(bg)
	go n.discovery.Run(bg)
	go n.refusals.Run(bg, n.link, 10*time.Second, log)
	if n.fleet != nil {
		go n.fleet.Run(bg)
	}
	if n.feed != nil {
		go n.feed.Run(bg)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP) // re-read the route credentials and check the routes
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-bg.Done():
				return
			case <-hup:
				log.Info("SIGHUP: reading route credentials and checking routes again")
				n.checker.Trigger()
			}
		}
	}()
	if n.fairq != nil {
		go n.fairq.Run(bg)
	}
	drain := &opsapi.Drain{}
	serveDone := make(chan error, 1)
	go func() { serveDone <- n.srv.Serve(ln) }()
	if o.TestBoxListen != "" {
		tln, err := net.Listen("tcp", o.TestBoxListen)
		if err != nil {
			return fmt.Errorf("listen %s: %w", o.TestBoxListen, err)
		}
		go func() { _ = n.srv.ServeTestBox(tln) }() // closed by the server's shutdown
		log.Info("test-box listener", "addr", tln.Addr().String())
	}
	if o.OpsListen != "" {
		ops := &http.Server{Addr: o.OpsListen, Handler: opsapi.Handler(n.tel.Registry(), storeVersion{n.store}, drain, log), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := ops.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("operator endpoints stopped", "addr", o.OpsListen, "err", err)
			}
		}()
		defer ops.Close()
		log.Info("operator endpoints listening", "addr", o.OpsListen)
	}

	select {
	case <-ctx.Done():
	case err := <-serveDone:
		return fmt.Errorf("serve: %w", err)
	}
	// SIGTERM (an orchestrator) gets the full graceful shutdown, SIGINT skips the delay.
	o.Shutdown.shutdown(log, n.srv, n.meter, drain, daemon.Signal(ctx) == syscall.SIGTERM)
	stopBG()
	<-syncDone
	if err := <-meterDone; err != nil {
		log.Error("usage sender stopped", "err", err)
	}
	return nil
}
