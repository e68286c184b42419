package meter

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/snapshot"
	"github.com/sekgate/gateway/shared/usage"
)

func TestConfigValidate(t *testing.T) {
	ok := func(c *Config) {}
	tests := []struct {
		name    string
		mod     func(*Config)
		wantErr string
	}{
		{"defaults", ok, ""},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "DataDir"},
		{"no link", func(c *Config) { c.Link = nil }, "Link"},
		{"batch too big", func(c *Config) { c.BatchSize = maxBatchSize + 1 }, "BatchSize"},
		{"negative batch size", func(c *Config) { c.BatchSize = -1 }, "BatchSize"},
		{"negative interval", func(c *Config) { c.BatchInterval = -time.Second }, "BatchInterval"},
		{"sub-second balance wait", func(c *Config) { c.BalanceWait = 10 * time.Millisecond }, "BalanceWait"},
		{"balance wait beyond the request timeout", func(c *Config) { c.BalanceWait = HTTPTimeout }, "BalanceWait"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{DataDir: "d", Link: testLink(t, "http://127.0.0.1:1", 0, 0)}
			tt.mod(&c)
			c.fill()
			err := c.validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				if c.BatchSize != DefaultBatchSize || c.FsyncWindow != DefaultFsyncWindow || c.Now == nil || c.Logger == nil {
					t.Errorf("defaults not filled: %+v", c)
				}
				return
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("validate = %v, want ErrConfig mentioning %q", err, tt.wantErr)
			}
		})
	}
}

func TestRecordsReachControlPlaneExactly(t *testing.T) {
	for _, n := range []int{1, 99, 100, 101, 750} {
		t.Run("", func(t *testing.T) {
			cp := newFakeCP(t)
			m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
			var want []usage.Record
			for i := range n {
				r := mkRecord(i, "acct_a", int64(i*3))
				want = append(want, *r)
				m.Record(r)
			}
			run(t, m)
			eventually(t, 5*time.Second, "all records delivered", func() bool { return cp.count() == n })
			for _, w := range want {
				got, ok := cp.record(w.RequestID)
				if !ok {
					t.Fatalf("record %s missing", w.RequestID)
				}
				if d := cmp.Diff(w, got); d != "" {
					t.Fatalf("record %s changed on the way (-sent +received):\n%s", w.RequestID, d)
				}
			}
			eventually(t, 5*time.Second, "spool emptied", func() bool {
				s := m.Stats()
				return s.SpoolRecords == 0 && s.SpoolBytes == 0
			})
			if s := m.Stats(); s.BatchesSent < uint64((n+99)/100) || s.OldestUnconfirmedAge != 0 {
				t.Errorf("stats after delivery: %+v", s)
			}
		})
	}
}

func TestGroupedFsync(t *testing.T) {
	const writers, each = 8, 250
	m := newMeter(t, testConfig(t, "http://127.0.0.1:1", t.TempDir()))
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				m.Record(mkRecord(w*each+i, "acct_a", 1))
			}
		})
	}
	wg.Wait()
	flush(t, m)
	s := m.Stats()
	if s.SpoolRecords != writers*each || s.QueuedRecords != 0 {
		t.Fatalf("spool holds %d records (%d queued), want %d durable", s.SpoolRecords, s.QueuedRecords, writers*each)
	}
	if s.Fsyncs == 0 || s.Fsyncs > writers*each/20 {
		t.Fatalf("%d fsyncs for %d records; want grouped (at most %d)", s.Fsyncs, writers*each, writers*each/20)
	}
	t.Logf("%d records, %d fsyncs", writers*each, s.Fsyncs)
}

func TestControlPlaneDownThenBack(t *testing.T) {
	cp := newFakeCP(t)
	cp.down.Store(true)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	run(t, m)
	const n = 1000
	for i := range n {
		m.Record(mkRecord(i, "acct_a", 2))
		if i%100 == 0 { // spread the records over several fsyncs, batches and retries
			eventually(t, 5*time.Second, "records durable", func() bool {
				s := m.Stats()
				return s.SpoolRecords-s.QueuedRecords > int64(i)
			})
		}
	}
	eventually(t, 5*time.Second, "several retries", func() bool { return m.Stats().Retries >= 5 })
	s := m.Stats()
	if s.SpoolRecords != n || s.LastError == "" || !strings.Contains(s.LastError, "503") || s.OldestUnconfirmedAge <= 0 {
		t.Fatalf("while down: %+v", s)
	}
	if got := m.Spendable("acct_a"); got != -2*n {
		t.Fatalf("Spendable while down = %d, want %d", got, -2*n)
	}
	cp.down.Store(false)
	eventually(t, 10*time.Second, "all records delivered", func() bool { return cp.count() == n })
	eventually(t, 5*time.Second, "spool emptied", func() bool { return m.Stats().SpoolRecords == 0 })
	if got := cp.balance("acct_a"); got != -2*n {
		t.Fatalf("ledger balance = %d, want %d", got, -2*n)
	}
	eventually(t, 10*time.Second, "balance view", func() bool { return m.Spendable("acct_a") == -2*n })
}

func TestCrashThenResend(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, dir)
	m1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		m1.Record(mkRecord(i, "acct_a", 10))
	}
	flush(t, m1)
	m1.spool.abandon() // the process dies: no final write, nothing sent
	m1.closed.Store(true)

	m2 := newMeter(t, cfg)
	if s := m2.Stats(); s.SpoolRecords != n {
		t.Fatalf("recovered %d records, want %d", s.SpoolRecords, n)
	}
	if got := m2.Spendable("acct_a"); got != -10*n {
		t.Fatalf("recovered unconfirmed spend: Spendable = %d, want %d", got, -10*n)
	}
	if cp.count() != 0 {
		t.Fatal("records sent before Run")
	}
	run(t, m2)
	eventually(t, 5*time.Second, "recovered records delivered", func() bool { return cp.count() == n })
	eventually(t, 5*time.Second, "spool emptied", func() bool { return len(segFiles(t, dir)) == 0 })
}

func TestSpoolLockedByOtherMeter(t *testing.T) {
	dir := t.TempDir()
	newMeter(t, testConfig(t, "http://127.0.0.1:1", dir))
	cfg := testConfig(t, "http://127.0.0.1:1", dir)
	if _, err := New(cfg); !errors.Is(err, ErrSpoolLocked) {
		t.Fatalf("second meter on one spool: err = %v, want ErrSpoolLocked", err)
	}
}

func TestTornTailSkipped(t *testing.T) {
	valid := appendFrame(nil, []byte(`{"request_id":"x","account_id":"acct_a","price_micro_sek":1}`))
	tests := []struct {
		name string
		tail []byte
	}{
		{"half header", valid[:5]},
		{"header only", valid[:frameHeader]},
		{"partial payload", valid[:len(valid)-3]},
		{"bad checksum", append(append([]byte{}, valid[:len(valid)-1]...), '!')},
		{"zero-filled block", make([]byte, 4096)},
		{"huge length", []byte{0xff, 0xff, 0xff, 0x7f, 1, 2, 3, 4, 5}},
		{"checksummed non-JSON", appendFrame(nil, []byte("not json"))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cp := newFakeCP(t)
			cfg := testConfig(t, cp.srv.URL, dir)
			m1, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 50
			for i := range n {
				m1.Record(mkRecord(i, "acct_a", 1))
			}
			if err := m1.Close(); err != nil {
				t.Fatal(err)
			}
			segs := segFiles(t, dir)
			if len(segs) != 1 {
				t.Fatalf("segments: %v", segs)
			}
			f, err := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.Write(tt.tail)
			f.Close()

			m2 := newMeter(t, cfg)
			if s := m2.Stats(); s.SpoolRecords != n {
				t.Fatalf("recovered %d records, want %d", s.SpoolRecords, n)
			}
			// New records go to a new segment, never behind the torn tail.
			m2.Record(mkRecord(n, "acct_a", 1))
			run(t, m2)
			eventually(t, 5*time.Second, "records delivered", func() bool { return cp.count() == n+1 })
			eventually(t, 5*time.Second, "spool emptied", func() bool { return len(segFiles(t, dir)) == 0 })
		})
	}
}

func TestConfirmedNotResentAfterRestart(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, dir)
	cfg.SegmentBytes = 2 << 10 // several segments
	m1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 400
	for i := range n {
		m1.Record(mkRecord(i, "acct_a", 1))
		if i%40 == 39 {
			flush(t, m1) // a segment is sealed after the write that fills it
		}
	}
	if segs := segFiles(t, dir); len(segs) < 3 {
		t.Fatalf("want several segments with SegmentBytes=2KiB, got %d", len(segs))
	}
	stop := run(t, m1)
	eventually(t, 5*time.Second, "delivered", func() bool { return cp.count() == n })
	eventually(t, 5*time.Second, "spool shrinks to nothing", func() bool {
		s := m1.Stats()
		return s.SpoolRecords == 0 && s.SpoolBytes == 0 && len(segFiles(t, dir)) == 0
	})
	stop()
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	posts := cp.posts.Load()

	m2 := newMeter(t, cfg)
	if s := m2.Stats(); s.SpoolRecords != 0 {
		t.Fatalf("restarted meter holds %d records", s.SpoolRecords)
	}
	run(t, m2)
	eventually(t, 5*time.Second, "restarted meter running", m2.running.Load)
	// A negative check needs a bounded wait: a batch of confirmed records would go out
	// within a batch interval (20 ms); 500 ms is many intervals even on a busy machine.
	poll.Holds(t, 500*time.Millisecond, "the restarted meter sends no batch of confirmed records", func() bool { return cp.posts.Load() == posts })
}

func TestRunReturnsPromptlyMidBackoff(t *testing.T) {
	cp := newFakeCP(t)
	cp.down.Store(true)
	cfg := testConfig(t, cp.srv.URL, t.TempDir())
	cfg.Link = testLink(t, cp.srv.URL, 10*time.Second, 30*time.Second)
	m := newMeter(t, cfg)
	m.Record(mkRecord(1, "acct_a", 1))
	// The client calls Backoff right before it sleeps: once it has, Run is in the backoff.
	inBackoff := make(chan struct{})
	var once sync.Once
	backoff := m.client.Backoff
	m.client.Backoff = func(lo, hi time.Duration, attempt int, resp *http.Response) time.Duration {
		d := backoff(lo, hi, attempt, resp)
		once.Do(func() { close(inBackoff) })
		return d
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	select {
	case <-inBackoff: // now sleeping in a 5..10 s backoff
	case <-time.After(10 * time.Second):
		t.Fatal("the first attempt never went into a backoff")
	}
	cancel()
	// The backoff is at least 5 s: returning within 4 s, however busy the machine,
	// means the cancel cut it short.
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	case <-time.After(4 * time.Second):
		t.Fatal("Run still sleeping in backoff 4s after cancel")
	}
	// The unconfirmed batch is kept and goes out on the next Run.
	cp.down.Store(false)
	m.cfg.Link = testLink(t, cp.srv.URL, time.Millisecond, time.Millisecond)
	m.client = m.newClient()
	run(t, m)
	eventually(t, 5*time.Second, "delivered after restart of Run", func() bool { return cp.count() == 1 })
}

func TestRunTwiceAndAfterClose(t *testing.T) {
	m := newMeter(t, testConfig(t, "http://127.0.0.1:1", t.TempDir()))
	run(t, m)
	eventually(t, 10*time.Second, "running", m.running.Load)
	if err := m.Run(context.Background()); !errors.Is(err, ErrRunning) {
		t.Fatalf("second Run = %v, want ErrRunning", err)
	}
	m2 := newMeter(t, testConfig(t, "http://127.0.0.1:1", t.TempDir()))
	m2.Close()
	if err := m2.Run(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Run after Close = %v, want ErrClosed", err)
	}
	m2.Record(mkRecord(1, "a", 1)) // logged, no panic
}

func TestBadReplyIsRetried(t *testing.T) {
	cp := newFakeCP(t)
	cp.badReply.Store(true)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	m.Record(mkRecord(1, "acct_a", 5))
	run(t, m)
	eventually(t, 5*time.Second, "retries", func() bool { return m.Stats().Retries >= 3 })
	if s := m.Stats(); s.SpoolRecords != 1 || !strings.Contains(s.LastError, "confirms batch") {
		t.Fatalf("a reply for another batch must not confirm: %+v", s)
	}
	cp.badReply.Store(false)
	eventually(t, 5*time.Second, "confirmed", func() bool { return m.Stats().SpoolRecords == 0 })
}

func TestBalanceWatchDeliversTopUp(t *testing.T) {
	cp := newFakeCP(t)
	cp.credit("acct_a", 1000)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	bals, seq := cp.snapshotBalances()
	m.SeedBalances(bals, seq)
	if got := m.Spendable("acct_a"); got != 1000 {
		t.Fatalf("seeded Spendable = %d", got)
	}
	run(t, m)
	eventually(t, 5*time.Second, "the watch waiting at the control plane", func() bool { return cp.watching.Load() >= 1 })
	start := time.Now()
	cp.credit("acct_a", 5_000_000)
	cp.credit("acct_b", 7)
	eventually(t, 10*time.Second, "top-up seen", func() bool {
		return m.Spendable("acct_a") == 5_001_000 && m.Spendable("acct_b") == 7
	})
	t.Logf("top-up reached the node in %s", time.Since(start))
}

// Stats counts what the node's metrics show (dataplane/telemetry reads them at each scrape).
func TestStatsCounts(t *testing.T) {
	cfg := testConfig(t, "http://127.0.0.1:1", t.TempDir())
	m := newMeter(t, cfg)
	m.Record(mkRecord(1, "a", 1))
	flush(t, m)
	s := m.Stats()
	if s.SpoolRecords != 1 || s.SpoolBytes == 0 || s.Records != 1 || s.Fsyncs != 1 || s.BatchesSent != 0 || s.Retries != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestSeedBalancesIgnoresStale(t *testing.T) {
	m := newMeter(t, testConfig(t, "http://127.0.0.1:1", t.TempDir()))
	m.SeedBalances([]snapshot.Balance{{AccountID: "a", MicroSEK: 100}}, 10)
	m.SeedBalances([]snapshot.Balance{{AccountID: "a", MicroSEK: 999}}, 9)
	m.SeedBalances([]snapshot.Balance{{AccountID: "a", MicroSEK: 999}}, 10)
	if got := m.Spendable("a"); got != 100 {
		t.Fatalf("Spendable = %d, want 100 (older and equal seqs ignored)", got)
	}
	m.SeedBalances([]snapshot.Balance{{AccountID: "a", MicroSEK: 50}}, 11)
	if got := m.Spendable("a"); got != 50 {
		t.Fatalf("Spendable = %d, want 50", got)
	}
	if got := m.bal.cursor.Load(); got != 11 {
		t.Fatalf("watch cursor = %d, want 11", got)
	}
}

func TestSpoolWriteFailureIsRetried(t *testing.T) {
	cp := newFakeCP(t)
	m := newMeter(t, testConfig(t, cp.srv.URL, t.TempDir()))
	var fails atomic.Int32
	fails.Store(3)
	real := m.spool.createFile
	m.spool.mu.Lock()
	m.spool.createFile = func(path string) (segFile, error) {
		if fails.Add(-1) >= 0 {
			return nil, errors.New("disk full")
		}
		return real(path)
	}
	m.spool.mu.Unlock()
	const n = 20
	for i := range n {
		m.Record(mkRecord(i, "acct_a", 1))
	}
	eventually(t, 10*time.Second, "write error reported", func() bool {
		return strings.Contains(m.Stats().LastError, "disk full")
	})
	if s := m.Stats(); s.SpoolRecords != n {
		t.Fatalf("records in transit not counted: %+v", s)
	}
	flush(t, m)
	run(t, m)
	eventually(t, 5*time.Second, "delivered after the disk recovered", func() bool { return cp.count() == n })
}

// TestProcessKillLosesNothing models SIGKILL right after Record returned: the writer is
// stopped without doing any more work (no write, no fsync), in-memory state is dropped, and
// a new Meter on the same directory must recover and resend every record.
func TestProcessKillLosesNothing(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
	}{
		{"kill before any fsync", time.Hour}, // the background fsync never runs
		{"kill within the default window", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cp := newFakeCP(t)
			cfg := testConfig(t, cp.srv.URL, dir)
			cfg.FsyncWindow = tt.window
			cfg.SegmentBytes = 8 << 10 // rotation happens among the unsynced records
			m1, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 300
			for i := range n {
				m1.Record(mkRecord(i, "acct_a", 10))
			}
			if tt.window == time.Hour {
				if s := m1.Stats(); s.Fsyncs != 0 || s.QueuedRecords != n {
					t.Fatalf("before the kill: %+v, want no fsync and %d records not durable", s, n)
				}
			}
			m1.spool.abandon() // SIGKILL: no more writes or fsyncs, memory gone
			m1.closed.Store(true)

			m2 := newMeter(t, cfg)
			if s := m2.Stats(); s.SpoolRecords != n {
				t.Fatalf("recovered %d records after the kill, want %d", s.SpoolRecords, n)
			}
			if got := m2.Spendable("acct_a"); got != -10*n {
				t.Fatalf("recovered unconfirmed spend: Spendable = %d, want %d", got, -10*n)
			}
			run(t, m2)
			eventually(t, 5*time.Second, "recovered records delivered", func() bool { return cp.count() == n })
			for i := range n {
				if _, ok := cp.record(mkRecord(i, "acct_a", 10).RequestID); !ok {
					t.Fatalf("record %d lost", i)
				}
			}
			eventually(t, 5*time.Second, "spool emptied", func() bool { return len(segFiles(t, dir)) == 0 })
		})
	}
}
