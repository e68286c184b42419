package meter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sekgate/gateway/dataplane/cplink"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/sekgate/gateway/shared/usage"
)

// testConfig is a config with short waits for tests.
func testConfig(t testing.TB, cpURL, dir string) Config {
	t.Helper()
	return Config{
		DataDir:       dir,
		Link:          testLink(t, cpURL, 5*time.Millisecond, 50*time.Millisecond),
		BatchSize:     100,
		BatchInterval: 20 * time.Millisecond,
		BalanceWait:   time.Second,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// testLink is node-a's link to the control plane at cpURL with the given retry waits.
func testLink(t testing.TB, cpURL string, waitMin, waitMax time.Duration) *cplink.Client {
	t.Helper()
	l, err := cplink.New(cplink.Config{URL: cpURL, NodeID: "node-a", NodeToken: testToken, RetryWaitMin: waitMin, RetryWaitMax: waitMax})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newMeter(t testing.TB, cfg Config) *Meter {
	t.Helper()
	m, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// run starts m.Run and returns a stop function that cancels it and waits for it to return.
func run(t testing.TB, m *Meter) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return stop
}

func eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, timeout, what, cond)
}

func flush(t testing.TB, m *Meter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

var testTS = time.Date(2026, 11, 22, 10, 11, 12, 123456789, time.UTC)

// mkRecord builds a varied record.
func mkRecord(i int, acct string, price int64) *usage.Record {
	r := &usage.Record{
		RequestID:        fmt.Sprintf("req_%08d", i),
		TS:               testTS.Add(time.Duration(i) * time.Millisecond),
		AccountID:        acct,
		Model:            "llama-3.3-70b",
		Endpoint:         "/v1/chat/completions",
		Stream:           i%2 == 0,
		Provider:         "simulator",
		Residency:        "se",
		Status:           200,
		Result:           usage.ResultOK,
		PromptTokens:     int64(10 + i),
		CompletionTokens: int64(i % 7),
		PriceMicroSEK:    price,
		DurationMS:       int64(i % 100),
	}
	if i%3 != 0 {
		k := fmt.Sprintf("key_%012x", i)
		r.KeyID = &k
	}
	if i%5 == 0 {
		r.Routing = &usage.Routing{Policy: "se", Attempts: []usage.Attempt{
			{Route: "r1", Provider: "p1", Region: "se-sto", Status: 503, Error: "upstream", DurationMS: 3},
			{Route: "r2", Provider: "p2", Region: "se-got", Status: 200, DurationMS: 40},
		}}
	}
	return r
}

func segFiles(t testing.TB, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "spool", segPrefix+"*"+segSuffix))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// requestRuns stands for a request running between its balance check and its record: up
// to 1.5 ms. A real sleep: the overspend tests put real concurrent load on the meter, and
// this gap between check and record is what lets spend race past the balance.
func requestRuns() {
	time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
}
