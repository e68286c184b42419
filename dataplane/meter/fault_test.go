package meter

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/poll"
)

// faultFile wraps a segment file and fails chosen calls: a torn write writes half of the
// buffer and then fails, a failed fsync returns an error.
type faultFile struct {
	segFile
	mu        sync.Mutex
	tearWrite int // fail the n-th Write (1-based) after writing half of it; 0: never
	failSync  int // fail the n-th Sync; 0: never
	writes    int
	syncs     int
}

func (f *faultFile) Write(p []byte) (int, error) {
	f.mu.Lock()
	f.writes++
	tear := f.writes == f.tearWrite
	f.mu.Unlock()
	if tear {
		n, _ := f.segFile.Write(p[:len(p)/2])
		return n, errors.New("injected: disk full")
	}
	return f.segFile.Write(p)
}

func (f *faultFile) Sync() error {
	f.mu.Lock()
	f.syncs++
	fail := f.syncs == f.failSync
	f.mu.Unlock()
	if fail {
		return errors.New("injected: fsync I/O error")
	}
	return f.segFile.Sync()
}

// injectFaults makes the next segment the spool creates a faultFile configured by set;
// later segments are plain files.
func injectFaults(t *testing.T, m *Meter, set func(*faultFile)) {
	t.Helper()
	real := m.spool.createFile
	first := true
	m.spool.mu.Lock()
	defer m.spool.mu.Unlock()
	m.spool.createFile = func(path string) (segFile, error) {
		f, err := real(path)
		if err != nil || !first {
			return f, err
		}
		first = false
		ff := &faultFile{segFile: f}
		set(ff)
		return ff, nil
	}
}

func TestTornWriteIsCutAndRewritten(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, dir)
	m1, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	injectFaults(t, m1, func(f *faultFile) { f.tearWrite = 6 })
	const n = 40
	for i := range n {
		m1.Record(mkRecord(i, "acct_a", 1))
	}
	if s := m1.Stats(); !strings.Contains(s.LastError, "injected: disk full") || s.SpoolRecords != n {
		t.Fatalf("after the torn write: %+v", s)
	}
	flush(t, m1) // the records held in memory since the failure go to a new segment
	segs := segFiles(t, dir)
	if len(segs) != 2 {
		t.Fatalf("want the torn segment sealed and a second one, got %v", segs)
	}
	var good []byte
	for i := range 5 {
		good = appendFrame(good, mustJSON(t, mkRecord(i, "acct_a", 1)))
	}
	if got, err := os.ReadFile(segs[0]); err != nil || !bytes.Equal(got, good) {
		t.Fatalf("torn segment holds %d bytes (err %v); want exactly its 5 good frames (%d bytes)", len(got), err, len(good))
	}
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	m2 := newMeter(t, cfg)
	if s := m2.Stats(); s.SpoolRecords != n {
		t.Fatalf("recovered %d records, want %d", s.SpoolRecords, n)
	}
	run(t, m2)
	eventually(t, 5*time.Second, "records delivered", func() bool { return cp.count() == n })
}

func TestFailedFsyncRewritesUnsyncedRecords(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, dir)
	m := newMeter(t, cfg)
	injectFaults(t, m, func(f *faultFile) { f.failSync = 1 })
	const n = 30
	for i := range n {
		m.Record(mkRecord(i, "acct_a", 1))
	}
	eventually(t, 10*time.Second, "fsync error reported", func() bool {
		s := m.Stats()
		return s.LastError != "" && s.SpoolRecords == n
	})
	flush(t, m)
	s := m.Stats()
	if s.SpoolRecords != n || s.QueuedRecords != 0 {
		t.Fatalf("after the retry: %+v, want %d durable records", s, n)
	}
	segs := segFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("the segment whose fsync failed must be cut to nothing and removed: %v", segs)
	}
	run(t, m)
	eventually(t, 5*time.Second, "records delivered", func() bool { return cp.count() == n })
	if got := cp.posts.Load(); got < 1 {
		t.Fatal("nothing posted")
	}
}

func TestOnlyFsyncedRecordsAreSent(t *testing.T) {
	dir := t.TempDir()
	cp := newFakeCP(t)
	cfg := testConfig(t, cp.srv.URL, dir)
	cfg.FsyncWindow = time.Hour
	cfg.BatchInterval = time.Millisecond
	m := newMeter(t, cfg)
	run(t, m)
	const n = 10
	for i := range n {
		m.Record(mkRecord(i, "acct_a", 1))
	}
	eventually(t, 5*time.Second, "records queued", func() bool { return m.Stats().QueuedRecords == n })
	// A negative check needs a bounded wait: with a 1 ms batch interval, an unsynced
	// batch would go out within a few ms; 300 ms leaves room for a busy machine.
	poll.Holds(t, 300*time.Millisecond, "no batch sent before the records were fsynced", func() bool { return cp.posts.Load() == 0 })
	if s := m.Stats(); s.QueuedRecords != n || s.OldestUnconfirmedAge <= 0 {
		t.Fatalf("unsynced records not reported: %+v", s)
	}
	start := time.Now()
	flush(t, m) // cuts the hour-long window short
	// The window is an hour: any return within 30 s means Flush cut it short.
	if el := time.Since(start); el > 30*time.Second {
		t.Fatalf("Flush took %s", el)
	}
	eventually(t, 5*time.Second, "records delivered after fsync", func() bool { return cp.count() == n })
	eventually(t, 5*time.Second, "spool emptied", func() bool { return len(segFiles(t, dir)) == 0 })
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
