package accesslog

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
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
