package meter

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-cleanhttp"

	"github.com/sekgate/gateway/shared/residency"
)

// Defaults of Config.
const (
	DefaultBatchSize     = 500
	DefaultBatchInterval = 200 * time.Millisecond
	DefaultFsyncWindow   = 10 * time.Millisecond
	DefaultSegmentBytes  = 4 << 20
	DefaultRetryWaitMin  = 100 * time.Millisecond
	DefaultRetryWaitMax  = 30 * time.Second
	DefaultBalanceWait   = 25 * time.Second
	DefaultHTTPTimeout   = 60 * time.Second

	maxBatchSize = 100_000
)

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("meter config")

// Config configures a Meter. Zero values take the documented defaults.
type Config struct {
	// DataDir is the node's data directory (required); the spool lives in DataDir/spool.
	DataDir string
	// ControlPlaneURL is the control plane's base URL, e.g. http://127.0.0.1:8081 (required).
	ControlPlaneURL string
	// NodeID names this node (X-Node-Id) and NodeToken authenticates it (both required).
	NodeID    string
	NodeToken string
	// Country is the node's --country (ISO 3166-1 alpha-2, upper case), sent with balance
	// polls so the control plane lists only the balances of accounts this node may serve;
	// empty: every account's.
	Country string

	// BatchSize is the most records per batch (default 500); a batch is sent as soon as it
	// is full, or BatchInterval (default 200 ms) after its first record became durable.
	BatchSize     int
	BatchInterval time.Duration
	// FsyncWindow is how long the syncer gathers written records after the first unsynced
	// one before fsyncing them together (default 10 ms). Together with the disk's fsync
	// latency it bounds what a power loss can take; a process crash takes nothing, as
	// Record writes each record to the segment file before returning. A negative value
	// means no wait.
	FsyncWindow time.Duration
	// SegmentBytes is the size after which a spool segment file is sealed and a new one
	// started (default 4 MiB).
	SegmentBytes int64

	// RetryWaitMin and RetryWaitMax bound the exponential backoff between attempts to reach
	// the control plane (defaults 100 ms and 30 s). There is no attempt limit.
	RetryWaitMin time.Duration
	RetryWaitMax time.Duration
	// BalanceWait is the long-poll wait asked of the balance watch (default 25 s, whole
	// seconds, at least 1 s).
	BalanceWait time.Duration

	// HTTPClient talks to the control plane. Its Timeout, when set, must exceed BalanceWait.
	// Default: a pooled client with a 60 s timeout.
	HTTPClient *http.Client
	// Logger defaults to slog.Default(); Now defaults to time.Now.
	Logger *slog.Logger
	Now    func() time.Time
	// OnBatch, when set, is called after the control plane confirmed a batch, with its
	// record count and the time from its first send, retries included (metrics).
	OnBatch func(records int, took time.Duration)
}

func (c *Config) fill() {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.BatchInterval == 0 {
		c.BatchInterval = DefaultBatchInterval
	}
	if c.FsyncWindow == 0 {
		c.FsyncWindow = DefaultFsyncWindow
	} else if c.FsyncWindow < 0 {
		c.FsyncWindow = 0
	}
	if c.SegmentBytes == 0 {
		c.SegmentBytes = DefaultSegmentBytes
	}
	if c.RetryWaitMin == 0 {
		c.RetryWaitMin = DefaultRetryWaitMin
	}
	if c.RetryWaitMax == 0 {
		c.RetryWaitMax = DefaultRetryWaitMax
	}
	if c.BalanceWait == 0 {
		c.BalanceWait = DefaultBalanceWait
	}
	if c.HTTPClient == nil {
		hc := cleanhttp.DefaultPooledClient()
		hc.Timeout = DefaultHTTPTimeout
		c.HTTPClient = hc
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c *Config) validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("DataDir is required"))
	}
	if u, err := url.Parse(c.ControlPlaneURL); c.ControlPlaneURL == "" || err != nil ||
		(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("ControlPlaneURL %q is not an http(s) URL", c.ControlPlaneURL))
	}
	if c.NodeID == "" || strings.ContainsAny(c.NodeID, "\r\n") {
		errs = append(errs, errors.New("NodeID is required (one line)"))
	}
	if c.NodeToken == "" || strings.ContainsAny(c.NodeToken, "\r\n") {
		errs = append(errs, errors.New("NodeToken is required (one line)"))
	}
	if !residency.ValidCountry(c.Country) {
		errs = append(errs, fmt.Errorf("Country %q is not an upper-case ISO 3166-1 alpha-2 country code", c.Country))
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		errs = append(errs, fmt.Errorf("BatchSize %d outside 1..%d", c.BatchSize, maxBatchSize))
	}
	if c.BatchInterval < 0 {
		errs = append(errs, fmt.Errorf("BatchInterval %s is negative", c.BatchInterval))
	}
	if c.SegmentBytes < 1 {
		errs = append(errs, fmt.Errorf("SegmentBytes %d is not positive", c.SegmentBytes))
	}
	if c.RetryWaitMin < 0 || c.RetryWaitMax < c.RetryWaitMin {
		errs = append(errs, fmt.Errorf("retry waits %s..%s are not an interval", c.RetryWaitMin, c.RetryWaitMax))
	}
	if c.BalanceWait < time.Second {
		errs = append(errs, fmt.Errorf("BalanceWait %s is under 1s", c.BalanceWait))
	}
	if c.HTTPClient.Timeout != 0 && c.HTTPClient.Timeout <= c.BalanceWait {
		errs = append(errs, fmt.Errorf("HTTPClient.Timeout %s must exceed BalanceWait %s", c.HTTPClient.Timeout, c.BalanceWait))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}
