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
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/meter"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/routing"
	"github.com/sekgate/gateway/dataplane/server"
	"github.com/sekgate/gateway/dataplane/startfeed"
	"github.com/sekgate/gateway/dataplane/telemetry"
	"github.com/sekgate/gateway/internal/daemon"
	"github.com/sekgate/gateway/internal/flagenv"
	"github.com/sekgate/gateway/shared/internalapi"
)

// Config is the data plane's settings, declared once: each tagged field is a flag
// (flagenv.Bind), also read from GATEWAY_<NAME> and from the --config file, and a line of
// docs/configuration.md. Groups: the public edge, the link to the control plane, routing,
// the queue and the fleet, metering, operations.
type Config struct {
	// The public edge.
	Listen         string            `flag:"listen" default:"127.0.0.1:8080" help:"public listen address"`
	Edge           server.Config     // its Settings are flags: timeouts, caps, attempts, URLs
	TrustedProxies string            `flag:"trusted-proxies" help:"comma-separated CIDRs of proxies whose X-Forwarded-For names the client"`
	Region         regionOptions     // where the node runs
	regionURLs     map[string]string // Region.URLs, parsed
	// The link to the control plane.
	ControlPlaneURL string         `flag:"control-plane-url" default:"http://127.0.0.1:8081" help:"control plane base URL"`
	NodeToken       flagenv.Secret `flag:"node-token" help:"token authenticating this node to the control plane, ≥ 32 bytes (or --node-token-file)"`
	NodeID          string         `flag:"node-id" help:"name of this node (default: the host name)"`
	SnapshotWait    time.Duration  `flag:"snapshot-wait" default:"30s" help:"long-poll wait for snapshot changes"`
	Link            linkOptions    // signatures, TLS, token file
	// Routing.
	Upstream        proxy.Config         // upstream pool and timeouts
	Breaker         routing.HealthConfig // per-route circuit breakers
	Routing         routingOptions       // load-aware routing and the fair queue
	Discovery       discoveryOptions     // routes whose replicas come from DNS
	CredentialsFile string               `flag:"credentials-file" help:"file of GATEWAY_CREDENTIAL_*=value lines, re-read when it changes and on SIGHUP"`
	// The fleet.
	LimitShareNodes  int           `flag:"limit-share-nodes" default:"1" help:"fallback N: enforce 1/N of each limit until the fleet exchange answers (always, --fleet-interval 0)"`
	FleetInterval    time.Duration `flag:"fleet-interval" default:"1s" help:"report interval of limit demand for the node's fleet share; 3 unanswered: fallback (0: off)"`
	StartFeedURL     string        `flag:"start-feed-url" help:"NATS URL where the fleet's nodes share their requests' starts, nats://host:port (empty: off)"`
	StartFeedSubject string        `flag:"start-feed-subject" default:"sekgate.starts" help:"NATS subject of the start feed (one per fleet)"`
	// Metering.
	DataDir       string        `flag:"data-dir" default:".data/dataplane" help:"directory for the last-known-good snapshot and the usage spool"`
	BatchInterval time.Duration `flag:"usage-batch-interval" default:"200ms" help:"longest wait before a usage batch is sent"`
	BatchSize     int           `flag:"usage-batch-size" default:"500" help:"most usage records per batch sent to the control plane (1 to 10000)"`
	FsyncWindow   time.Duration `flag:"spool-fsync-window" default:"50ms" help:"how long spooled usage records wait to be fsynced together (0: at once)"`
	// Operations.
	LogLevel      string          `flag:"log-level" default:"info" help:"debug, info, warn or error"`
	OpsListen     string          `flag:"ops-listen" help:"private address for /metrics, /livez, /readyz and /debug/pprof/ (empty: off)"`
	TestBoxListen string          `flag:"test-box-listen" help:"private address where the console's test box is served with --test-box-token (empty: off)"`
	TestBoxToken  flagenv.Secret  `flag:"test-box-token" help:"the console test box's own token, ≥ 32 bytes, admitted only on --test-box-listen"`
	Observe       observeOptions  // access log and tracing
	Shutdown      shutdownOptions // graceful shutdown steps
}

// FlagSet returns the data plane's settings as flags with their defaults, unparsed (for
// the configuration reference).
func FlagSet() *flag.FlagSet {
	var o Config
	return flagSet(&o)
}

func flagSet(o *Config) *flag.FlagSet {
	fs := flag.NewFlagSet("dataplane", flag.ContinueOnError)
	if err := flagenv.Bind(fs, o); err != nil {
		panic(err) // the tags are checked by TestConfigurationReference and TestFlagDefaults
	}
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
	if err := o.Link.validate(&o); err != nil {
		return o, err
	}
	box := o.TestBoxToken.Reveal()
	if (o.TestBoxListen == "") != (box == "") {
		return o, errors.New("--test-box-listen and --test-box-token go together")
	}
	if box != "" && (len(box) < internalapi.MinTokenBytes || box == o.NodeToken.Reveal()) {
		return o, fmt.Errorf("--test-box-token must be at least %d bytes and not the node token", internalapi.MinTokenBytes)
	}
	if o.NodeID == "" {
		o.NodeID, _ = os.Hostname()
	}
	if o.NodeID == "" {
		o.NodeID = "dataplane"
	}
	tp, err := edge.ParseProxies(o.TrustedProxies)
	if err != nil {
		return o, fmt.Errorf("--trusted-proxies: %w", err)
	}
	o.Edge.TrustedProxies = tp
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"header-timeout", o.Edge.HeaderTimeout}, {"body-idle-timeout", o.Edge.BodyIdleTimeout}, {"keepalive-timeout", o.Edge.IdleTimeout}, {"write-timeout", o.Edge.WriteTimeout}} {
		if d.v <= 0 {
			return o, fmt.Errorf("--%s must be positive", d.name)
		}
	}
	if o.Edge.MaxHeaderBytes < 1024 {
		return o, errors.New("--max-header-bytes must be at least 1024")
	}
	if o.Edge.MaxAttempts < 1 || o.Edge.RequestTimeout <= 0 {
		return o, errors.New("--max-attempts must be at least 1 and --request-timeout positive")
	}
	if o.Edge.PublicURL != "" {
		if o.Edge.PublicURL, err = baseurl.Parse(o.Edge.PublicURL); err != nil {
			return o, fmt.Errorf("--public-url: %w", err)
		}
	}
	if err := o.Region.validate(); err != nil {
		return o, err
	}
	if o.regionURLs, err = parseRegionURLs(o.Region.URLs); err != nil {
		return o, err
	}
	if o.Shutdown.Delay < 0 || o.Shutdown.DrainTimeout <= 0 || o.Shutdown.FlushTimeout <= 0 {
		return o, errors.New("--shutdown-delay must not be negative, --drain-timeout and --shutdown-flush-timeout must be positive")
	}
	if err := o.Routing.validate(); err != nil {
		return o, err
	}
	if err := o.Observe.validate(); err != nil {
		return o, err
	}
	if err := o.Discovery.validate(); err != nil {
		return o, err
	}
	if o.BatchSize < 1 || o.BatchSize > meter.MaxBatchSize {
		return o, fmt.Errorf("--usage-batch-size must be between 1 and %d", meter.MaxBatchSize)
	}
	if o.FsyncWindow < 0 || o.FsyncWindow > time.Second {
		return o, errors.New("--spool-fsync-window must be between 0 and 1s")
	}
	if o.BatchInterval <= 0 {
		return o, errors.New("--usage-batch-interval must be positive")
	}
	return o, validateFleet(o)
}

// validateFleet checks the fleet's settings: the fallback share, the exchange's interval
// and the start feed's subject.
func validateFleet(o Config) error {
	if o.LimitShareNodes < 1 {
		return errors.New("--limit-share-nodes must be at least 1")
	}
	if o.FleetInterval != 0 && (o.FleetInterval < 100*time.Millisecond || o.FleetInterval > time.Minute) {
		return errors.New("--fleet-interval must be 0 (off) or between 100ms and 1m")
	}
	if o.StartFeedURL != "" && !startfeed.ValidSubject(o.StartFeedSubject) {
		return fmt.Errorf("--start-feed-subject %q must be a NATS subject without wildcards: tokens of letters, digits, - and _ joined by dots", o.StartFeedSubject)
	}
	return nil
}

// Main runs the dataplane command with its arguments (args) and exits the process
// with its status.
func Main(args []string) {
	daemon.Main("dataplane", args, parseFlags, func(c Config) string { return c.LogLevel }, run)
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
