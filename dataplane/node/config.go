// Command dataplane runs a data-plane node: the public listener of the gateway. Every flag
// can also be set with an environment variable GATEWAY_<FLAG_NAME_UPPER_SNAKE>.
package node

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"time"

	"github.com/sekgate/gateway/dataplane/baseurl"
	"github.com/sekgate/gateway/dataplane/edge"
	"github.com/sekgate/gateway/dataplane/fleetshare"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Config is the data plane's settings: each is a flag (docs/configuration.md), also read from
// GATEWAY_<NAME> and from the --config file.
type Config struct {
	listen          string               // public listen address
	controlPlaneURL string               // control plane base URL
	nodeToken       flagenv.Secret       // token authenticating the node to the control plane
	nodeID          string               // name of this node (default: the host name)
	dataDir         string               // last-known-good snapshot and usage spool
	logLevel        string               // debug, info, warn or error
	opsListen       string               // private metrics and probes listener (empty: off)
	testBoxListen   string               // private listener of the console's test box (empty: off)
	testBoxToken    flagenv.Secret       // the test box's own token
	snapshotWait    time.Duration        // long-poll wait for snapshot changes
	batchInterval   time.Duration        // longest wait before a usage batch is sent
	batchSize       int                  // most usage records per batch
	fsyncWindow     time.Duration        // spool fsync grouping window (0: at once)
	upstream        proxy.Config         // upstream pool and timeouts
	breaker         routing.HealthConfig // per-route circuit breakers
	limitShareNodes int                  // nodes sharing the limits until the fleet says (the fallback's divisor)
	fleetInterval   time.Duration        // fleet exchange report interval (0: off)
	edge            server.Config        // public edge: its Settings are flags (flagenv.Bind)
	trustedProxies  string               // CIDRs whose X-Forwarded-For names the client
	credentialsFile string               // route credentials file, re-read when it changes
	link            linkOptions          // control-plane link: signatures, TLS, token file
	shutdown        shutdownOptions      // graceful shutdown steps
	region          regionOptions        // where the node runs
	regionURLs      map[string]string    // per residency policy, the region's base URL
	observe         observeOptions       // access log and tracing
	routing         routingOptions       // load-aware routing and the fair queue
	discovery       discoveryOptions     // routes whose replicas come from DNS
}

// FlagSet returns the data plane's settings as flags with their defaults, unparsed (for
// the configuration reference).
func FlagSet() *flag.FlagSet {
	var o Config
	return flagSet(&o)
}

func flagSet(o *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "public listen address")
	fs.StringVar(&o.controlPlaneURL, "control-plane-url", "http://127.0.0.1:8081", "control plane base URL")
	fs.Var(&o.nodeToken, "node-token", "token authenticating this node to the control plane, ≥ 32 bytes (or --node-token-file)")
	fs.StringVar(&o.nodeID, "node-id", "", "name of this node (default: the host name)")
	fs.StringVar(&o.dataDir, "data-dir", ".data/dataplane", "directory for the last-known-good snapshot and the usage spool")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.opsListen, "ops-listen", "", "private address for /metrics, /livez, /readyz and /debug/pprof/ (empty: off)")
	fs.StringVar(&o.testBoxListen, "test-box-listen", "", "private address where the console's test box is served with --test-box-token (empty: off)")
	fs.Var(&o.testBoxToken, "test-box-token", "the console test box's own token, ≥ 32 bytes, admitted only on --test-box-listen")
	fs.DurationVar(&o.snapshotWait, "snapshot-wait", 30*time.Second, "long-poll wait for snapshot changes")
	fs.DurationVar(&o.batchInterval, "usage-batch-interval", 200*time.Millisecond, "longest wait before a usage batch is sent")
	fs.IntVar(&o.batchSize, "usage-batch-size", meter.DefaultBatchSize, "most usage records per batch sent to the control plane (1 to 10000)")
	fs.DurationVar(&o.fsyncWindow, "spool-fsync-window", meter.DefaultFsyncWindow, "how long spooled usage records wait to be fsynced together (0: at once)")
	fs.IntVar(&o.limitShareNodes, "limit-share-nodes", 1, "fallback N: enforce 1/N of each limit until the fleet exchange answers (always, --fleet-interval 0)")
	fs.DurationVar(&o.fleetInterval, "fleet-interval", fleetshare.DefaultInterval, "report interval of limit demand for the node's fleet share; 3 unanswered: fallback (0: off)")
	fs.StringVar(&o.credentialsFile, "credentials-file", "", "file of GATEWAY_CREDENTIAL_*=value lines, re-read when it changes and on SIGHUP")
	fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs of proxies whose X-Forwarded-For names the client")
	for _, settings := range []any{&o.edge.Settings, &o.upstream, &o.breaker} {
		if err := flagenv.Bind(fs, settings); err != nil {
			panic(err) // the tags are checked by TestConfigurationReference
		}
	}
	o.link.register(fs)
	o.shutdown.register(fs)
	o.region.register(fs)
	o.observe.register(fs)
	o.routing.register(fs)
	o.discovery.register(fs)
	return fs
}

func parseFlags(args []string) (Config, error) { return parseSettings(os.Stdout, args, nil) }

// parseSettings is parseFlags reading the environment through lookup (os.LookupEnv when
// nil) and writing --print-config's output to w.
func parseSettings(w io.Writer, args []string, lookup func(string) (string, bool)) (Config, error) {
	var o Config
	if err := flagenv.ParseTo(w, flagSet(&o), args, "GATEWAY_", lookup); err != nil {
		return o, err
	}
	if err := o.link.validate(&o); err != nil {
		return o, err
	}
	box := o.testBoxToken.Reveal()
	if (o.testBoxListen == "") != (box == "") {
		return o, errors.New("--test-box-listen and --test-box-token go together")
	}
	if box != "" && (len(box) < internalapi.MinTokenBytes || box == o.nodeToken.Reveal()) {
		return o, fmt.Errorf("--test-box-token must be at least %d bytes and not the node token", internalapi.MinTokenBytes)
	}
	if o.nodeID == "" {
		o.nodeID, _ = os.Hostname()
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
	if o.edge.MaxAttempts < 1 || o.edge.RequestTimeout <= 0 {
		return o, errors.New("--max-attempts must be at least 1 and --request-timeout positive")
	}
	if o.edge.PublicURL != "" {
		if o.edge.PublicURL, err = baseurl.Parse(o.edge.PublicURL); err != nil {
			return o, fmt.Errorf("--public-url: %w", err)
		}
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
	if err := o.routing.validate(); err != nil {
		return o, err
	}
	if err := o.observe.validate(); err != nil {
		return o, err
	}
	if err := o.discovery.validate(); err != nil {
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
	if o.fleetInterval != 0 && (o.fleetInterval < 100*time.Millisecond || o.fleetInterval > time.Minute) {
		return o, errors.New("--fleet-interval must be 0 (off) or between 100ms and 1m")
	}
	return o, nil
}

// Main runs the dataplane command with its arguments (args) and exits the process
// with its status.
func Main(args []string) {
	daemon.Main("dataplane", args, parseFlags, func(c Config) string { return c.logLevel }, run)
}

func run(ctx context.Context, o Config, log *slog.Logger) error {
	n := &node{o: o, log: log, store: &index.Store{}, tel: telemetry.New()}
	defer n.close()
	for _, step := range []func() error{n.openLink, n.openMeter, n.openDiscovery, n.openSync, n.newServer} {
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
