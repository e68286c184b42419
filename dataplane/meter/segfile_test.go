package meter

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestMappedFileWrites(t *testing.T) {
	frame := func(i int) []byte { return appendFrame(nil, []byte(strings.Repeat("x", 100+i))) }
	tests := []struct {
		name string
		// write returns the bytes it wrote and whether the file must be cut to them.
		write func(t *testing.T, mf segFile) []byte
	}{
		{"frames inside the mapping", func(t *testing.T, mf segFile) []byte {
			var want []byte
			for i := range 20 {
				want = append(want, frame(i)...)
				mustWrite(t, mf, frame(i))
			}
			return want
		}},
		{"a write past the mapping's end", func(t *testing.T, mf segFile) []byte {
			big := bytes.Repeat([]byte{7}, 8<<10+mapSlack) // larger than the whole mapping
			want := append(frame(1), big...)
			mustWrite(t, mf, frame(1))
			mustWrite(t, mf, big)
			want = append(want, frame(2)...)
			mustWrite(t, mf, frame(2))
			return want
		}},
		{"truncated, then written", func(t *testing.T, mf segFile) []byte {
			mustWrite(t, mf, frame(1))
			mustWrite(t, mf, frame(2))
			if err := mf.Truncate(int64(len(frame(1)))); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, mf, frame(3))
			return append(frame(1), frame(3)...)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "seg")
			mf, err := createSegFile(path, 8<<10)
			if err != nil {
				t.Fatal(err)
			}
			if runtime.GOOS == "linux" && mf.(*mappedFile).m == nil {
				t.Fatal("segment not mapped on Linux")
			}
			want := tt.write(t, mf)
			if err := mf.Sync(); err != nil {
				t.Fatal(err)
			}
			// The bytes are in the file (its page cache) before Close, as after a write().
			if got := readPrefix(t, path, len(want)); !bytes.Equal(got, want) {
				t.Fatalf("before close the file holds %d bytes that differ from the %d written", len(got), len(want))
			}
			if err := mf.Close(); err != nil {
				t.Fatal(err)
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
				t.Fatalf("after close the file holds %d bytes (err %v), want exactly the %d written", len(got), err, len(want))
			}
		})
	}
}

func mustWrite(t *testing.T, w segFile, p []byte) {
	t.Helper()
	if n, err := w.Write(p); err != nil || n != len(p) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(p))
	}
}

func readPrefix(t *testing.T, path string, n int) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(f, buf); err != nil {
		t.Fatal(err)
	}
	return buf
}

// warnings counts log records at Warn and above.
type warnings struct {
	mu  sync.Mutex
	got []string
}

func (w *warnings) handler() slog.Handler {
	return slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.got = append(w.got, string(p))
		return len(p), nil
	}), &slog.HandlerOptions{Level: slog.LevelWarn})
}

func (w *warnings) list() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.got...)
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestKilledSegmentTailIsNotDamage: a process killed while its segment is mapped leaves
// the file at its reserved size, zeros after the frames. Recovery must cut the file to the
// frames, recover every record and log no damage; a torn frame before the zeros still is
// damage, salvaged as before.
func TestKilledSegmentTailIsNotDamage(t *testing.T) {
	tests := []struct {
		name   string
		tear   bool // a frame cut in half, as a death in the middle of its copy leaves it
		damage bool
	}{
		{"zeros after the last frame", false, false},
		{"a torn frame before the zeros", true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cp := newFakeCP(t)
			cfg := testConfig(t, cp.srv.URL, dir)
			cfg.FsyncWindow = time.Hour
			m1, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			const n = 50
			for i := range n {
				m1.Record(mkRecord(i, "acct_a", 3))
			}
			m1.spool.mu.Lock()
			seg := m1.spool.active
			frames := seg.written
			if tt.tear {
				half := appendFrame(nil, mustJSON(t, mkRecord(n, "acct_a", 3)))
				mf := seg.w.(*mappedFile)
				copy(mf.m[mf.n:], half[:len(half)/2])
			}
			m1.spool.mu.Unlock()
			m1.spool.abandon()
			m1.closed.Store(true)
			segs := segFiles(t, dir)
			if len(segs) != 1 || fileSize(t, segs[0]) <= frames {
				t.Fatalf("after the kill: segments %v; want one, larger than its %d bytes of frames", segs, frames)
			}

			var w warnings
			cfg.Logger = slog.New(w.handler())
			m2 := newMeter(t, cfg)
			if s := m2.Stats(); s.SpoolRecords != n {
				t.Fatalf("recovered %d records, want %d", s.SpoolRecords, n)
			}
			if got := fileSize(t, segs[0]); got != frames {
				t.Fatalf("recovered segment is %d bytes, want its %d bytes of frames", got, frames)
			}
			if logged := w.list(); (len(logged) > 0) != tt.damage {
				t.Fatalf("warnings %q; want damage reported: %v", logged, tt.damage)
			}
			run(t, m2)
			eventually(t, 5*time.Second, "recovered records delivered", func() bool { return cp.count() == n })
		})
	}
}

// TestSIGKILLedProcessLosesNoRecord runs a real process (this test binary, as a helper)
// that records n records into a spool with an hour's fsync window and is then killed with
// SIGKILL: every record it handed over must be recovered from what it wrote through the
// segment's mapping, with no damage reported.
func TestSIGKILLedProcessLosesNoRecord(t *testing.T) {
	const n = 20000 // several segments: rotation happens among unsynced records
	if testing.Short() && os.Getenv("METER_KILL_HELPER_DIR") == "" {
		t.Skip("starts a process; skipped with -short")
	}
	if dir := os.Getenv("METER_KILL_HELPER_DIR"); dir != "" {
		cfg := testConfig(t, "http://127.0.0.1:1", dir)
		cfg.FsyncWindow = time.Hour
		cfg.SegmentBytes = 1 << 20
		m, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			m.Record(mkRecord(i, "acct_a", 7))
		}
		os.Stdout.WriteString("recorded\n")
		_, _ = io.Copy(io.Discard, os.Stdin) // killed here; the parent holds stdin open
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGKILLedProcessLosesNoRecord$")
	cmd.Env = append(os.Environ(), "METER_KILL_HELPER_DIR="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe() // open until the kill: the helper waits on it
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "recorded\n" {
		_ = cmd.Process.Kill()
		t.Fatalf("helper: %q %v", line, err)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = cmd.Wait()

	var w warnings
	cfg := testConfig(t, "http://127.0.0.1:1", dir)
	cfg.Logger = slog.New(w.handler())
	m := newMeter(t, cfg)
	if s := m.Stats(); s.SpoolRecords != n {
		t.Fatalf("recovered %d records after SIGKILL, want %d", s.SpoolRecords, n)
	}
	if got := m.Spendable("acct_a"); got != -7*n {
		t.Fatalf("recovered unconfirmed spend %d, want %d", got, -7*n)
	}
	if logged := w.list(); len(logged) > 0 {
		t.Fatalf("recovery reported damage: %q", logged)
	}
}

func TestSyncData(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "seg"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("frame")); err != nil {
		t.Fatal(err)
	}
	if err := syncData(f); err != nil {
		t.Fatalf("syncData of an open file: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// The start journal ignores a file closed under it (a rewrite replaced it).
	if err := syncData(f); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("syncData of a closed file: %v, want os.ErrClosed", err)
	}
}
