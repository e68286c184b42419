package meter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/shared/residency"
)

// Defaults of Config.
const (
	DefaultBatchSize     = 500
	DefaultBatchInterval = 200 * time.Millisecond
	DefaultFsyncWindow   = 50 * time.Millisecond
	// MaxBatchSize is the most records a batch may carry: 10,000 records of about 600
	// bytes stay well inside the control plane's 32 MiB usage body limit.
	MaxBatchSize        = 10000
	DefaultSegmentBytes = 4 << 20
	DefaultBalanceWait  = 25 * time.Second
	// HTTPTimeout bounds each request to the control plane (a batch, a balance poll).
	HTTPTimeout = 60 * time.Second

	maxBatchSize = 100_000
)

// ErrConfig is wrapped by every configuration error New returns.
var ErrConfig = errors.New("meter config")

// Config configures a Meter. Zero values take the documented defaults.
type Config struct {
	// DataDir is the node's data directory (required); the spool lives in DataDir/spool.
	DataDir string
	// Link is the node's link to the control plane: its address, the node's credentials,
	// the transport and the retry and backoff policy of every send (required).
	Link *cplink.Client
	// Country is the node's --country (ISO 3166-1 alpha-2, upper case), sent with balance
	// polls so the control plane lists only the balances of accounts this node may serve;
	// empty: every account's.
	Country string

	// BatchSize is the most records per batch (default 500); a batch is sent as soon as it
	// is full, or BatchInterval (default 200 ms) after its first record became durable.
	BatchSize     int
	BatchInterval time.Duration
	// FsyncWindow is how long the syncer gathers written records after the first unsynced
	// one before fsyncing them together (default 50 ms). Together with the disk's fsync
	// latency it bounds what a power loss can take; a process crash takes nothing, as
	// Record writes each record to the segment file (its page cache, through a shared
	// mapping) before returning. A negative value
	// means no wait.
	FsyncWindow time.Duration
	// SegmentBytes is the size after which a spool segment file is sealed and a new one
	// started (default 4 MiB).
	SegmentBytes int64

	// BalanceWait is the long-poll wait asked of the balance watch (default 25 s, whole
	// seconds, at least 1 s, under HTTPTimeout).
	BalanceWait time.Duration
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
	if c.BalanceWait == 0 {
		c.BalanceWait = DefaultBalanceWait
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
	if c.Link == nil {
		errs = append(errs, errors.New("Link is required"))
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
	if c.BalanceWait < time.Second || c.BalanceWait >= HTTPTimeout {
		errs = append(errs, fmt.Errorf("BalanceWait %s is outside 1s..%s", c.BalanceWait, HTTPTimeout))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	return nil
}
