package meter

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sekgate/gateway/shared/usage"
)

// startOf is the start entry of stream record r: what the server hands Start when the
// stream is committed.
func startOf(r *usage.Record) *usage.Record {
	s := *r
	s.Result, s.Status, s.CompletionTokens, s.PriceMicroSEK = usage.ResultInterrupted, 200, 0, 7
	return &s
}

// kill simulates SIGKILL: nothing more is written, fsynced or sent; what was written stays.
func kill(m *Meter) {
	m.spool.abandon()
	m.closed.Store(true)
	close(m.startsStop)
	<-m.startsDone
	m.starts.mu.Lock()
	m.starts.f.Close() // no final fsync
	m.starts.f = nil
	m.starts.mu.Unlock()
}

// TestStartEntriesBecomeInterruptedRecords: streams open when the node is killed get a
// record each when it restarts (result interrupted, the start entry's tokens and price);
// a stream that ended before the kill keeps its own record and gets no second one.
func TestStartEntriesBecomeInterruptedRecords(t *testing.T) {
	cp := newFakeCP(t)
	dir := t.TempDir()
	m1 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	recs := []*usage.Record{mkRecord(1, "acct_a", 100), mkRecord(2, "acct_a", 100), mkRecord(3, "acct_b", 100)}
	for _, r := range recs {
		m1.Start(startOf(r))
	}
	m1.Record(recs[1]) // stream 2 ended; 1 and 3 are open when the node dies
	kill(m1)

	m2 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	if got := m2.interrupted.Load(); got != 2 {
		t.Fatalf("interrupted records recovered: %d, want 2", got)
	}
	if got := m2.Spendable("acct_a"); got != -100-7 {
		t.Fatalf("spendable %d: recovered records must count as unconfirmed spend", got)
	}
	run(t, m2)
	eventually(t, 5*time.Second, "3 records at the control plane", func() bool { return cp.count() == 3 })
	for i, want := range []string{usage.ResultInterrupted, usage.ResultOK, usage.ResultInterrupted} {
		got, ok := cp.record(recs[i].RequestID)
		if !ok || got.Result != want || (want == usage.ResultInterrupted && (got.PriceMicroSEK != 7 || got.PromptTokens != recs[i].PromptTokens)) {
			t.Fatalf("record %d: %+v %v, want result %s", i, got, ok, want)
		}
	}
	// The journal was emptied: a third start of the node adds nothing.
	if err := m2.Close(); err != nil {
		t.Fatal(err)
	}
	m3 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	if got := m3.interrupted.Load(); got != 0 {
		t.Fatalf("third start recovered %d interrupted records", got)
	}
}

// TestStartJournalStaysSmall: ended streams are dropped from the journal when it is
// rewritten, so its size follows the streams open, not the streams served.
func TestStartJournalStaysSmall(t *testing.T) {
	cp := newFakeCP(t)
	dir := t.TempDir()
	m := newMeter(t, testConfig(t, cp.srv.URL, dir))
	for i := range 5000 {
		r := mkRecord(i, "acct_a", 1)
		m.Start(startOf(r))
		m.Record(r)
	}
	if sz := fileSize(t, filepath.Join(dir, "spool", startsName)); sz > startsCompactBytes+4096 {
		t.Fatalf("start journal %d bytes after 5000 ended streams", sz)
	}
	open := mkRecord(99999, "acct_a", 1)
	m.Start(startOf(open))
	kill(m)
	m2 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	if got := m2.interrupted.Load(); got != 1 {
		t.Fatalf("recovered %d interrupted, want only the open stream", got)
	}
}

// TestPermanentRefusalGoesToDeadLetter: a batch the control plane refuses with a
// permanent 4xx is moved to a dead-letter segment (counted, logged) and the records after
// it are delivered; a 401 is not permanent and holds the spool until it clears.
func TestPermanentRefusalGoesToDeadLetter(t *testing.T) {
	cp := newFakeCP(t)
	dir := t.TempDir()
	m := newMeter(t, testConfig(t, cp.srv.URL, dir))
	run(t, m)
	cp.refuse.Store(400)
	m.Record(mkRecord(1, "acct_a", 10))
	eventually(t, 5*time.Second, "first record delivered", func() bool { return cp.count() == 1 })
	poison := mkRecord(2, "acct_a", 10)
	poison.RequestID = "poison_1"
	m.Record(poison)
	eventually(t, 5*time.Second, "poison batch dead-lettered", func() bool { return m.deadLetters.Load() == 1 })
	m.Record(mkRecord(3, "acct_a", 10))
	eventually(t, 5*time.Second, "later record delivered", func() bool { return cp.count() == 2 })
	eventually(t, 5*time.Second, "spool drained", func() bool { return m.Stats().SpoolRecords == 0 })
	if _, ok := cp.record("poison_1"); ok {
		t.Fatal("poison record reached the control plane")
	}
	dead, _ := filepath.Glob(filepath.Join(dir, "spool", deadDir, "*"+segSuffix))
	if len(dead) != 1 {
		t.Fatalf("dead-letter segments: %v", dead)
	}
	b, err := os.ReadFile(dead[0])
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	scanFrames(b, func(p []byte, _ int) { ids = append(ids, string(p)) })
	if len(ids) != 1 || !contains(ids[0], `"request_id":"poison_1"`) {
		t.Fatalf("dead-letter content %q", ids)
	}

	// 401: the node's credentials, not the batch: retried until it clears.
	cp.refuse.Store(401)
	poison2 := mkRecord(4, "acct_a", 10)
	poison2.RequestID = "poison_2"
	m.Record(poison2)
	posts := cp.posts.Load()
	eventually(t, 5*time.Second, "401 retried", func() bool { return cp.posts.Load() > posts+3 })
	if m.deadLetters.Load() != 1 || m.Stats().SpoolRecords != 1 {
		t.Fatalf("401 must not dead-letter: %d dead, %+v", m.deadLetters.Load(), m.Stats())
	}
	cp.refuse.Store(0)
	eventually(t, 5*time.Second, "held record delivered", func() bool { return cp.count() == 3 })
}

func contains(s, sub string) bool { return len(s) >= len(sub) && (s == sub || indexOf(s, sub) >= 0) }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// TestCorruptFrameMidSegmentSkipped: a frame damaged in the middle of a segment costs that
// record only; the records after it are found again and delivered. (Before: every later
// record of the segment was dropped.)
func TestCorruptFrameMidSegmentSkipped(t *testing.T) {
	cp := newFakeCP(t)
	dir := t.TempDir()
	m1 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	var sizes []int
	for i := range 10 {
		r := mkRecord(i, "acct_a", 10)
		sizes = append(sizes, frameHeader+len(r.AppendJSON(nil)))
		m1.Record(r)
	}
	flush(t, m1)
	if err := m1.Close(); err != nil {
		t.Fatal(err)
	}
	segs := segFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	data, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	off := sizes[0] + sizes[1] + sizes[2] + sizes[3] // the fifth frame
	data[off+frameHeader+10] ^= 0xff                 // a flipped payload byte: its checksum fails
	data[off+sizes[4]+2] ^= 0x7f                     // and the sixth frame's length is garbage
	if err := os.WriteFile(segs[0], data, 0o600); err != nil {
		t.Fatal(err)
	}
	m2 := newMeter(t, testConfig(t, cp.srv.URL, dir))
	if s := m2.Stats(); s.SpoolRecords != 8 {
		t.Fatalf("recovered %d records, want 8 of 10", s.SpoolRecords)
	}
	run(t, m2)
	eventually(t, 5*time.Second, "8 records delivered", func() bool { return cp.count() == 8 })
	for _, i := range []int{0, 3, 6, 9} {
		if _, ok := cp.record(mkRecord(i, "", 0).RequestID); !ok {
			t.Errorf("record %d lost", i)
		}
	}
	eventually(t, 5*time.Second, "segment deleted", func() bool { return len(segFiles(t, dir)) == 0 })
}

// TestCorruptFrameWhileRunningSkipped: durable frames damaged on disk before the sender
// reads them cost only the damaged records; the ones after are still delivered and the
// spool drains. (Before: every later record of the segment was counted lost.)
func TestCorruptFrameWhileRunningSkipped(t *testing.T) {
	cp := newFakeCP(t)
	dir := t.TempDir()
	m := newMeter(t, testConfig(t, cp.srv.URL, dir))
	var sizes []int
	for i := range 10 {
		r := mkRecord(i, "acct_a", 10)
		sizes = append(sizes, frameHeader+len(r.AppendJSON(nil)))
		m.Record(r)
	}
	flush(t, m)
	segs := segFiles(t, dir)
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	f, err := os.OpenFile(segs[0], os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	off := int64(sizes[0] + sizes[1] + sizes[2])
	if _, err := f.WriteAt([]byte{0xde, 0xad}, off+frameHeader+5); err != nil { // the fourth record
		t.Fatal(err)
	}
	f.Close()
	run(t, m)
	eventually(t, 5*time.Second, "9 records delivered", func() bool { return cp.count() == 9 })
	eventually(t, 5*time.Second, "spool drained", func() bool { return m.Stats().SpoolRecords == 0 })
	if _, ok := cp.record(mkRecord(3, "", 0).RequestID); ok {
		t.Fatal("the damaged record cannot have been delivered")
	}
	for _, i := range []int{4, 9} {
		if _, ok := cp.record(mkRecord(i, "", 0).RequestID); !ok {
			t.Errorf("record %d after the damage lost", i)
		}
	}
}

// FuzzScanFrames: any bytes (a damaged segment or start journal) are scanned without panic,
// every frame found is one that frameAt accepts, and a valid frame behind garbage is found.
func FuzzScanFrames(f *testing.F) {
	good := appendFrame(nil, []byte(`{"request_id":"r1"}`))
	f.Add([]byte{}, []byte{0xff, 0, 0, 0})
	f.Add(good, []byte{1, 0, 0, 0, 9, 9, 9, 9, '{'})
	f.Fuzz(func(t *testing.T, garbage, more []byte) {
		data := append(append(append([]byte{}, garbage...), more...), good...)
		found := false
		n, skipped := scanFrames(data, func(p []byte, end int) {
			if end > len(data) || len(p) == 0 || p[0] != '{' {
				t.Fatalf("bad frame ending at %d: %q", end, p)
			}
			if end == len(data) && string(p) == `{"request_id":"r1"}` {
				found = true
			}
		})
		if n < 1 || !found || skipped > int64(len(data)) {
			t.Fatalf("n=%d skipped=%d found=%v", n, skipped, found)
		}
	})
}
