// Package accesslog writes the data plane's access log: one structured line (log/slog,
// JSON or text) per inference request with its identifiers, route, outcome, usage, price
// and timings. It never holds prompt or answer content, and never a secret: keys are named
// by their ID, not their secret.
//
// Lines go through a buffer flushed every FlushInterval and at Close, so a request costs no
// write() of its own; a crash can lose the last interval's lines (the usage records are in
// the spool regardless). Successful requests can be sampled; every failure is logged.
package accesslog

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Config configures a Log.
type Config struct {
	// Writer receives the lines (required), e.g. os.Stderr.
	Writer io.Writer
	// JSON writes JSON lines (production); otherwise slog's key=value text (local use).
	JSON bool
	// Sample is the share of successful requests (result ok) logged, up to 1 (0: the
	// default, 1, every one; negative: none); failures and refusals are always logged.
	Sample float64
	// FlushInterval is the longest a line waits in the buffer (default 200ms).
	FlushInterval time.Duration
}

// Log is an access log. Its methods are safe for concurrent use; a nil *Log logs nothing.
type Log struct {
	h         slog.Handler
	out       *flusher
	threshold uint64 // a successful request is logged when a random uint64 is below it
	all       bool
	stop      chan struct{}
	done      chan struct{}
}

// New starts a Log; Close it to flush.
func New(cfg Config) *Log {
	if cfg.FlushInterval <= 0 {
		cfg.FlushInterval = 200 * time.Millisecond
	}
	if cfg.Sample == 0 {
		cfg.Sample = 1
	}
	out := &flusher{w: bufio.NewWriterSize(cfg.Writer, 64<<10)}
	l := &Log{out: out, all: cfg.Sample >= 1, stop: make(chan struct{}), done: make(chan struct{})}
	if !l.all && cfg.Sample > 0 {
		l.threshold = uint64(cfg.Sample * math.MaxUint64)
	}
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if cfg.JSON {
		l.h = slog.NewJSONHandler(out, opts)
	} else {
		l.h = slog.NewTextHandler(out, opts)
	}
	go l.flushLoop(cfg.FlushInterval)
	return l
}

func (l *Log) flushLoop(every time.Duration) {
	defer close(l.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.out.flush()
		}
	}
}

// Close stops the flusher and writes what is buffered.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	close(l.stop)
	<-l.done
	return l.out.flush()
}

// Entry is one request's line. Zero fields are left out.
type Entry struct {
	Time time.Time
	// RequestID is the X-Request-Id; KeyID and AccountID identify the caller (never the
	// key's secret).
	RequestID, KeyID, AccountID string
	Endpoint, Model             string
	// Provider, Route and Region name the route tried last; NodeRegion this node.
	Provider, Route, Region, NodeRegion string
	Status                              int
	// Result is the record's result, or "refused" with Error naming the code of a request
	// refused before routing.
	Result, Error                  string
	Stream                         bool
	Attempts                       int
	PromptTokens, CompletionTokens int64
	PriceMicroSEK                  int64
	Duration, TTFT                 time.Duration
}

// Write logs e, unless it is a successful request that sampling leaves out.
func (l *Log) Write(e *Entry) {
	if l == nil || (e.Result == "ok" && !l.all && rand.Uint64() >= l.threshold) {
		return
	}
	// Attributes gathered on the stack and added at once: the record allocates its overflow
	// slice once, not at every growth.
	var buf [24]slog.Attr
	attrs := append(buf[:0], slog.String("request_id", e.RequestID))
	for _, f := range [...]struct{ k, v string }{{"key_id", e.KeyID}, {"account_id", e.AccountID}, {"endpoint", e.Endpoint},
		{"model", e.Model}, {"provider", e.Provider}, {"route", e.Route}, {"region", e.Region}, {"node_region", e.NodeRegion}} {
		if f.v != "" {
			attrs = append(attrs, slog.String(f.k, f.v))
		}
	}
	attrs = append(attrs, slog.Int("status", e.Status))
	if e.Result != "" {
		attrs = append(attrs, slog.String("result", e.Result))
	}
	if e.Error != "" {
		attrs = append(attrs, slog.String("error", e.Error))
	}
	if e.Stream {
		attrs = append(attrs, slog.Bool("stream", true))
	}
	for _, f := range [...]struct {
		k string
		v int64
	}{{"attempts", int64(e.Attempts)}, {"prompt_tokens", e.PromptTokens}, {"completion_tokens", e.CompletionTokens}, {"price_micro_sek", e.PriceMicroSEK}} {
		if f.v != 0 {
			attrs = append(attrs, slog.Int64(f.k, f.v))
		}
	}
	attrs = append(attrs, slog.Float64("duration_ms", float64(e.Duration.Microseconds())/1000))
	if e.TTFT > 0 {
		attrs = append(attrs, slog.Float64("ttft_ms", float64(e.TTFT.Microseconds())/1000))
	}
	r := slog.NewRecord(e.Time, slog.LevelInfo, "request", 0)
	r.AddAttrs(attrs...)
	_ = l.h.Handle(context.Background(), r)
}

// flusher is the buffered destination: the handler writes whole lines into it.
type flusher struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (f *flusher) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Write(p)
}

func (f *flusher) flush() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.w.Flush()
}
