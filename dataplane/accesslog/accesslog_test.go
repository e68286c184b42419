package accesslog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var entry = Entry{Time: time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC), RequestID: "req_1", KeyID: "key_1", AccountID: "acct_1",
	Endpoint: "/v1/chat/completions", Model: "m", Provider: "p", Route: "r", Region: "se-sto-1", NodeRegion: "se-sto",
	Status: 200, Result: "ok", Attempts: 1, PromptTokens: 12, CompletionTokens: 3, PriceMicroSEK: 360,
	Duration: 1500 * time.Microsecond, TTFT: 700 * time.Microsecond, Stream: true}

func TestJSONLine(t *testing.T) {
	var buf bytes.Buffer
	l := New(Config{Writer: &buf, JSON: true, FlushInterval: time.Hour})
	e := entry
	l.Write(&e)
	if buf.Len() != 0 {
		t.Fatal("written before a flush")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, buf.String())
	}
	for k, want := range map[string]any{"msg": "request", "request_id": "req_1", "key_id": "key_1", "account_id": "acct_1",
		"route": "r", "node_region": "se-sto", "status": 200.0, "result": "ok", "stream": true, "prompt_tokens": 12.0,
		"completion_tokens": 3.0, "price_micro_sek": 360.0, "duration_ms": 1.5, "ttft_ms": 0.7, "time": "2026-11-24T08:00:00Z"} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	if _, ok := m["error"]; ok {
		t.Error("an empty field is written")
	}
}

func TestSamplingKeepsFailures(t *testing.T) {
	var buf bytes.Buffer
	l := New(Config{Writer: &buf, Sample: 0.5, FlushInterval: time.Hour})
	ok, failed := entry, entry
	failed.Result, failed.Status = "upstream_error", 502
	for range 1000 {
		l.Write(&ok)
		l.Write(&failed)
	}
	l.Close()
	oks, fails := strings.Count(buf.String(), "result=ok"), strings.Count(buf.String(), "result=upstream_error")
	if fails != 1000 || oks < 400 || oks > 600 {
		t.Fatalf("%d of 1000 successes and %d of 1000 failures logged at 0.5", oks, fails)
	}
}

func BenchmarkWrite(b *testing.B) {
	l := New(Config{Writer: io.Discard, JSON: true})
	defer l.Close()
	e := entry
	b.ReportAllocs()
	for b.Loop() {
		l.Write(&e)
	}
}

// The JSON line is what slog's JSONHandler writes for the same fields.
func TestJSONMatchesSlog(t *testing.T) {
	for _, e := range []Entry{entry, {Time: entry.Time, RequestID: "req_\"2\"\n", Endpoint: "/v1/messages", Status: 401,
		Result: "refused", Error: "invalid_api_key", Duration: 42 * time.Microsecond}} {
		var want bytes.Buffer
		var buf [24]slog.Attr
		r := slog.NewRecord(e.Time, slog.LevelInfo, "request", 0)
		r.AddAttrs(entryAttrs(&buf, &e)...)
		if err := slog.NewJSONHandler(&want, nil).Handle(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		got := appendJSON(nil, &e)
		var g, w map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%v: %s", err, got)
		}
		_ = json.Unmarshal(want.Bytes(), &w)
		if !reflect.DeepEqual(g, w) || got[len(got)-1] != '\n' {
			t.Errorf("line\n%s\nslog\n%s", got, want.Bytes())
		}
	}
}

// stuckWriter blocks every Write until release is closed, like a pipe nobody reads.
type stuckWriter struct {
	release chan struct{}
	mu      sync.Mutex
	got     bytes.Buffer
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.got.Write(p)
}

// TestStalledDestinationNeverBlocksRequests: while the destination takes nothing, logging
// goes on at full speed; past 8 MiB waiting, lines are dropped and counted; once the
// destination moves again, every line kept arrives whole and in order.
func TestStalledDestinationNeverBlocksRequests(t *testing.T) {
	w := &stuckWriter{release: make(chan struct{})}
	l := New(Config{Writer: w, JSON: true, FlushInterval: time.Millisecond})
	e := entry
	line := len(appendJSON(nil, &e))
	n := 2 * maxBuffered / line // twice what fits
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			e.RequestID = fmt.Sprintf("req_%07d", i)
			l.Write(&e)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("logging blocked on a stalled destination")
	}
	dropped := l.Dropped()
	if dropped < int64(n)/3 || dropped > int64(n)*2/3+int64(flushAt/line)+1 {
		t.Fatalf("%d of %d lines dropped; want about half", dropped, n)
	}
	close(w.release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(w.got.String(), "\n"), "\n")
	if int64(len(lines))+dropped != int64(n) {
		t.Fatalf("%d lines written and %d dropped, want %d in all", len(lines), dropped, n)
	}
	prev := ""
	for _, ln := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(ln), &m); err != nil {
			t.Fatalf("torn line %q: %v", ln, err)
		}
		id, _ := m["request_id"].(string)
		if id <= prev {
			t.Fatalf("line %s after %s", id, prev)
		}
		prev = id
	}
}

func TestAppendMillisMatchesFloatFormatting(t *testing.T) {
	ds := []time.Duration{0, time.Microsecond, 999 * time.Microsecond, time.Millisecond, 1500 * time.Microsecond,
		1234567 * time.Microsecond, 10 * time.Second, -1500 * time.Microsecond, -time.Microsecond, 999, time.Hour + 7*time.Microsecond}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		ds = append(ds, time.Duration(rng.Int64N(int64(48*time.Hour)))-time.Hour)
	}
	for _, d := range ds {
		want := strconv.AppendFloat(nil, float64(d.Microseconds())/1000, 'f', -1, 64)
		if got := appendMillis(nil, d); string(got) != string(want) {
			t.Fatalf("appendMillis(%v) = %s, want %s", d, got, want)
		}
	}
}
