package meter

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-retryablehttp"
	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/shared/internalapi"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

// Errors of the Meter's lifecycle.
var (
	ErrClosed  = errors.New("meter closed")
	ErrRunning = errors.New("meter already running")
)

// Meter spools request records, delivers them to the control plane and keeps the node's
// balance view. Its methods are safe for concurrent use.
type Meter struct {
	cfg         Config
	log         *slog.Logger
	spool       *spool
	starts      *startLog
	startsStop  chan struct{}
	startsDone  chan struct{}
	bal         *balances
	client      *retryablehttp.Client
	usageURL    string
	balancesURL string

	running atomic.Bool
	closed  atomic.Bool
	// inflight is the batch being sent; kept across Run calls so it is resent first.
	inflight *batch
	// lastBody is the length of the last batch body read (only the send loop reads
	// batches): the next body is allocated at about that size instead of growing to it.
	lastBody int

	// Counters for Stats: batches confirmed, retried sends (each after a failed one), records handed
	// over, grouped fsyncs; interrupted counts records rebuilt from start entries at
	// start-up, deadLetters records the control plane refused permanently (dead-letter
	// segments).
	batches, retries, records, fsyncs atomic.Uint64
	interrupted, deadLetters          atomic.Uint64

	errMu   sync.Mutex
	lastErr string
	lastAt  time.Time

	// minPoll spaces balance polls that came back early with nothing new.
	minPoll time.Duration
}

// Stats is the meter's state for operators.
type Stats struct {
	// SpoolRecords counts records handed over and not yet confirmed by the control plane
	// (QueuedRecords of them not yet durable: written but not yet fsynced, or held in
	// memory after a disk failure).
	SpoolRecords  int64
	QueuedRecords int64
	// SpoolBytes is the size of the spool's segment files, confirmed records not yet
	// deleted included.
	SpoolBytes int64
	// OldestUnconfirmedAge is how long the oldest unconfirmed record has waited (0 when
	// none does). For records recovered after a restart it counts from the request's time.
	OldestUnconfirmedAge time.Duration
	// BatchesSent counts batches the control plane confirmed; Retries counts repeated
	// attempts to send a batch; Fsyncs counts grouped spool fsyncs.
	BatchesSent uint64
	Retries     uint64
	Fsyncs      uint64
	// Records counts records handed to Record; Interrupted counts records rebuilt from
	// start entries at start-up; DeadLetters counts records the control plane refused
	// permanently.
	Records, Interrupted, DeadLetters uint64
	// LastError is the most recent failure talking to the control plane or writing the
	// spool, and when it happened; empty when none occurred.
	LastError   string
	LastErrorAt time.Time
}

// New opens the spool under cfg.DataDir/spool, recovers the records it holds (they count
// as unconfirmed spend and are sent again by Run) and starts the spool syncer.
func New(cfg Config) (*Meter, error) {
	cfg.fill()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	m := &Meter{
		cfg:         cfg,
		log:         cfg.Logger.With("component", "meter"),
		bal:         newBalances(),
		usageURL:    cfg.Link.URL(internalapi.PathUsage),
		balancesURL: cfg.Link.URL(internalapi.PathBalances),
		minPoll:     time.Second,
	}
	dir := filepath.Join(cfg.DataDir, "spool")
	fail := func(err error) (*Meter, error) { return nil, err }
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(fmt.Errorf("create spool dir: %w", err))
	}
	// Streams open when the node last stopped: their start entries, minus those whose
	// record the spool holds, become records of their own (see starts.go).
	open, err := readStarts(dir, m.log)
	if err != nil {
		return fail(err)
	}
	sp, err := openSpool(dir, cfg.SegmentBytes, cfg.FsyncWindow, m.log, cfg.Now, func() { m.fsyncs.Add(1) },
		func(p []byte) {
			r := gjson.GetManyBytes(p, "account_id", "price_micro_sek", "request_id", "key_id")
			m.bal.addUnconfirmed(r[0].String(), r[1].Int())
			if k := r[3].String(); k != "" {
				m.bal.addUnconfirmed(k, r[1].Int())
			}
			if len(open) > 0 {
				delete(open, r[2].String())
			}
		})
	if err != nil {
		return fail(fmt.Errorf("open spool: %w", err))
	}
	m.spool = sp
	if err := m.recoverStarts(open); err != nil {
		_ = sp.close()
		return fail(err)
	}
	m.client = m.newClient()
	return m, nil
}

// encodeBufs holds buffers for encoding records on the request path.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Record hands over a finished request's record. It encodes the record, counts its price
// as unconfirmed spend of the account and appends it to the spool with one write() before
// it returns, so the record survives the death of the process (SIGKILL, OOM kill, panic);
// the fsync that protects it against power loss follows in the background, grouped with
// other records. Record never waits for an fsync or the network. rec may be reused after
// Record returns.
func (m *Meter) Record(rec *usage.Record) {
	if rec == nil {
		return
	}
	bp := encodeBufs.Get().(*[]byte)
	p := rec.AppendJSON((*bp)[:0]) // the spool copies it into its frame
	defer func() { *bp = p[:0]; encodeBufs.Put(bp) }()
	m.bal.addUnconfirmed(rec.AccountID, rec.PriceMicroSEK)
	if rec.KeyID != nil && *rec.KeyID != "" {
		m.bal.addUnconfirmed(*rec.KeyID, rec.PriceMicroSEK)
	}
	if !m.spool.append(p) {
		m.log.Error("meter: record after Close is lost", "request_id", rec.RequestID,
			"account_id", rec.AccountID, "price_micro_sek", rec.PriceMicroSEK)
		return
	}
	m.starts.done(rec.RequestID)
	m.records.Add(1)
}

// Start writes the start entry of a stream about to be committed: rec is the record the
// request gets if the node dies before the stream ends (result interrupted, the tokens
// known so far, their price). The stream's record, handed to Record when it ends,
// supersedes it. Like Record, Start does one write() and never waits for an fsync; rec
// may be reused after it returns.
func (m *Meter) Start(rec *usage.Record) {
	if rec == nil || m.closed.Load() {
		return
	}
	bp := encodeBufs.Get().(*[]byte)
	p := rec.AppendJSON((*bp)[:0])
	m.starts.add(rec.RequestID, p)
	*bp = p[:0]
	encodeBufs.Put(bp)
}

// recoverStarts appends the records of streams the node did not finish (start entries
// without a record) to the spool, waits until they are durable, and starts an empty
// start journal.
func (m *Meter) recoverStarts(open map[string][]byte) error {
	dir := filepath.Join(m.cfg.DataDir, "spool")
	if len(open) > 0 {
		for _, p := range open {
			r := gjson.GetManyBytes(p, "account_id", "price_micro_sek", "key_id")
			m.bal.addUnconfirmed(r[0].String(), r[1].Int())
			if k := r[2].String(); k != "" {
				m.bal.addUnconfirmed(k, r[1].Int())
			}
			m.spool.append(p)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := m.Flush(ctx)
		cancel()
		if err != nil {
			return fmt.Errorf("record interrupted streams: %w", err)
		}
		m.interrupted.Add(uint64(len(open)))
		m.log.Warn("meter: streams interrupted by the node's last stop recorded from their start entries",
			"records", len(open))
	}
	st, err := openStarts(dir, m.log)
	if err != nil {
		return err
	}
	m.starts = st
	m.startsStop, m.startsDone = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(m.startsDone)
		st.syncLoop(m.cfg.FsyncWindow, m.startsStop)
	}()
	return nil
}

// Spendable returns the account's balance as the node knows it minus the spend the node
// has not yet had confirmed, in micro-SEK. An account the node knows nothing about has 0.
// Admit inference only when it is positive.
func (m *Meter) Spendable(accountID string) int64 {
	return m.bal.spendable(accountID)
}

// Hold takes amount (micro-SEK) from the account's spendable balance when it covers it,
// for a request admitted against its maximum price; Release gives it back once the
// request's record is handed to Record.
func (m *Meter) Hold(accountID string, amount int64) bool { return m.bal.hold(accountID, amount) }

// Release gives back what Hold took.
func (m *Meter) Release(accountID string, amount int64) { m.bal.addUnconfirmed(accountID, -amount) }

// SeedBalances takes the balances of a snapshot, complete as of ledger sequence seq. An
// account whose known balance is as new or newer keeps it.
func (m *Meter) SeedBalances(b []snapshot.Balance, seq int64) {
	m.bal.apply(b, nil, seq, true)
}

// Flush waits until every record handed over before the call is durable in the spool
// (written and fsynced). It asks the syncer not to wait out the rest of FsyncWindow.
func (m *Meter) Flush(ctx context.Context) error {
	want := m.spool.handedOver()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		if m.spool.flushed(want) {
			return nil
		}
		m.spool.signal(m.spool.hurry)
		if m.closed.Load() {
			return ErrClosed
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// Stats returns the meter's counters and spool depth.
func (m *Meter) Stats() Stats {
	st := m.spool.state()
	s := Stats{
		SpoolRecords:  st.records,
		QueuedRecords: st.queued,
		SpoolBytes:    st.bytes,
		BatchesSent:   m.batches.Load(),
		Retries:       m.retries.Load(),
		Fsyncs:        m.fsyncs.Load(),
		Records:       m.records.Load(),
		Interrupted:   m.interrupted.Load(),
		DeadLetters:   m.deadLetters.Load(),
	}
	if !st.oldest.IsZero() {
		s.OldestUnconfirmedAge = max(m.cfg.Now().Sub(st.oldest), 0)
	}
	m.errMu.Lock()
	s.LastError, s.LastErrorAt = m.lastErr, m.lastAt
	m.errMu.Unlock()
	if st.writeErr != nil && (s.LastError == "" || !strings.HasPrefix(s.LastError, "spool")) {
		s.LastError = "spool: " + st.writeErr.Error()
	}
	return s
}

func (m *Meter) setErr(err error) {
	m.errMu.Lock()
	m.lastErr, m.lastAt = err.Error(), m.cfg.Now()
	m.errMu.Unlock()
}

// Close writes and fsyncs what is not yet durable and closes the spool. Call it after Run returned;
// records handed over afterwards are lost (and logged). Unconfirmed records stay in the
// spool for the next Meter.
func (m *Meter) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	err := m.spool.close()
	if m.starts != nil {
		close(m.startsStop)
		<-m.startsDone
		m.starts.close()
	}
	if err != nil {
		return fmt.Errorf("close spool: %w", err)
	}
	return nil
}

// recordTime returns a spooled record's ts, or the zero time.
func recordTime(p []byte) time.Time {
	t, err := time.Parse(time.RFC3339Nano, gjson.GetBytes(p, "ts").String())
	if err != nil {
		return time.Time{}
	}
	return t
}

// validRecordJSON reports whether a spooled payload is a JSON object.
func validRecordJSON(p []byte) bool {
	return len(p) > 0 && p[0] == '{' && gjson.ValidBytes(p)
}
