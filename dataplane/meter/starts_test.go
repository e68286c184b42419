package meter

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestStartJournalRewritesStayProportional: thousands of streams open at once (their entries
// far past startsCompactBytes) and then ending one after another must not rewrite the
// journal once per ended stream (each rewrite copies every open entry, so that was
// quadratic and held the meter for seconds), and what a rewrite keeps is exactly the open
// entries.
func TestStartJournalRewritesStayProportional(t *testing.T) {
	cases := []struct {
		name         string
		streams      int
		maxRewrites  int
		closeEvery   int // end every closeEvery-th stream first, the rest after
		wantLeftOpen int
	}{
		{name: "all end", streams: 10_000, maxRewrites: 12},
		{name: "half end", streams: 4_000, maxRewrites: 12, closeEvery: 2, wantLeftOpen: 2_000},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := openStarts(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer l.close()
			payload := func(i int) []byte {
				return fmt.Appendf(nil, `{"request_id":"req_%06d","result":"interrupted","pad":%q}`, i, strings.Repeat("x", 200))
			}
			for i := range tc.streams {
				l.add(fmt.Sprintf("req_%06d", i), payload(i))
			}
			base := l.rewrites
			for i := range tc.streams {
				if tc.closeEvery == 0 || i%tc.closeEvery == 0 {
					l.done(fmt.Sprintf("req_%06d", i))
				}
			}
			if got := l.rewrites - base; got > tc.maxRewrites {
				t.Fatalf("%d streams ending rewrote the journal %d times, want at most %d", tc.streams, got, tc.maxRewrites)
			}
			l.mu.Lock()
			size, live := l.size, l.live
			l.mu.Unlock()
			if size > max(startsCompactBytes, 2*live) {
				t.Errorf("journal is %d bytes for %d live bytes: compaction never ran", size, live)
			}
			l.close()
			got, err := readStarts(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			open := 0
			for id := range got {
				var i int
				if _, err := fmt.Sscanf(id, "req_%06d", &i); err != nil {
					t.Fatalf("unexpected entry %q", id)
				}
				if tc.closeEvery != 0 && i%tc.closeEvery != 0 {
					open++
				}
			}
			// Entries already done may survive until the next rewrite (the control plane
			// keeps the first record of a request ID); every open one must be there.
			if open != tc.wantLeftOpen {
				t.Errorf("journal holds %d of the %d open entries", open, tc.wantLeftOpen)
			}
		})
	}
}

// TestStartJournalFsyncsOnlyOpenEntries: the syncer fsyncs the journal a window after an
// entry is written while that entry's stream is still open, and not at all for entries whose
// streams ended within the window (their records are in the spool).
func TestStartJournalFsyncsOnlyOpenEntries(t *testing.T) {
	// In a bubble the clock moves only when every goroutine waits: the window cannot
	// pass while the test writes entries, however busy the machine.
	synctest.Test(t, func(t *testing.T) {
		l, err := openStarts(t.TempDir(), slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		defer l.close()
		const window = 20 * time.Millisecond
		stop, done := make(chan struct{}), make(chan struct{})
		go func() { defer close(done); l.syncLoop(window, stop) }()
		defer func() { close(stop); <-done }()
		fsyncs := func() int {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.fsyncs
		}
		// Sleeping in the bubble moves synctest's fake clock: no real wait.
		settle := func() { time.Sleep(4 * window); synctest.Wait() }
		settle()
		if n := fsyncs(); n != 1 {
			t.Fatalf("%d fsyncs after opening, want 1 (the new file)", n)
		}
		for i := range 20 { // short streams: started and ended within the window
			id := fmt.Sprintf("req_%d", i)
			l.add(id, []byte(`{"request_id":"`+id+`"}`))
			l.done(id)
		}
		settle()
		if n := fsyncs(); n != 1 {
			t.Fatalf("%d fsyncs after streams that all ended within the window, want 1", n)
		}
		l.add("req_open", []byte(`{"request_id":"req_open"}`))
		l.add("req_short", []byte(`{"request_id":"req_short"}`))
		l.done("req_short")
		settle()
		if n := fsyncs(); n != 2 {
			t.Fatalf("%d fsyncs after a stream stayed open past the window, want 2", n)
		}
		l.done("req_open") // ended after its entry was made durable: nothing more to fsync
		settle()
		if n := fsyncs(); n != 2 {
			t.Fatalf("%d fsyncs, want 2", n)
		}
	})
}
