// Package accesslog writes the data plane's access log: one structured line (JSON in the
// layout of log/slog's JSONHandler, encoded without allocation; or log/slog's text) per
// inference request with its identifiers, route, outcome, usage, price
// and timings. It never holds prompt or answer content, and never a secret: keys are named
// by their ID, not their secret.
//
// Lines go through a buffer that a goroutine of the Log writes out every FlushInterval,
// when 64 KiB wait, and at Close: a request costs no write() of its own and never waits on
// the destination (a slow pipe, a stalled log collector). A crash can lose the last
// interval's lines (the usage records are in the spool regardless). While the destination
// takes nothing, lines gather up to 8 MiB; past that they are dropped and counted
// (Dropped) rather than stall the gateway. Successful requests can be sampled; every
// failure is logged.
package accesslog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sekgate/gateway/shared/jsonenc"
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
	json      bool
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
	out := &flusher{w: cfg.Writer, full: make(chan struct{}, 1)}
	l := &Log{json: cfg.JSON, out: out, all: cfg.Sample >= 1, stop: make(chan struct{}), done: make(chan struct{})}
	if !l.all && cfg.Sample > 0 {
		l.threshold = uint64(cfg.Sample * math.MaxUint64)
	}
	l.h = slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo})
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
		case <-l.out.full:
		}
		_ = l.out.flush()
	}
}

// Dropped returns how many lines were dropped because the destination fell 8 MiB behind.
func (l *Log) Dropped() int64 {
	if l == nil {
		return 0
	}
	return l.out.dropped.Load()
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
	if l.json {
		bp := lineBufs.Get().(*[]byte)
		b := appendJSON((*bp)[:0], e)
		_, _ = l.out.Write(b)
		*bp = b[:0]
		lineBufs.Put(bp)
		return
	}
	var buf [24]slog.Attr
	r := slog.NewRecord(e.Time, slog.LevelInfo, "request", 0)
	r.AddAttrs(entryAttrs(&buf, e)...)
	_ = l.h.Handle(context.Background(), r)
}

// entryAttrs lists e's fields as slog attributes in buf (empty fields left out), the text
// format's line; gathered on the stack and added at once, the record allocates its overflow
// slice once.
func entryAttrs(buf *[24]slog.Attr, e *Entry) []slog.Attr {
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
	return attrs
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// appendJSON appends e as one JSON line in the layout of slog's JSONHandler (time, level,
// msg, then the fields; empty fields left out), without reflection or allocation, as the
// usage records are encoded: the production format costs the request path no garbage.
func appendJSON(b []byte, e *Entry) []byte {
	b = append(b, `{"time":"`...)
	b = e.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"INFO","msg":"request","request_id":`...)
	b = jsonenc.AppendString(b, e.RequestID)
	b = appendStr(b, "key_id", e.KeyID)
	b = appendStr(b, "account_id", e.AccountID)
	b = appendStr(b, "endpoint", e.Endpoint)
	b = appendStr(b, "model", e.Model)
	b = appendStr(b, "provider", e.Provider)
	b = appendStr(b, "route", e.Route)
	b = appendStr(b, "region", e.Region)
	b = appendStr(b, "node_region", e.NodeRegion)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(e.Status), 10)
	b = appendStr(b, "result", e.Result)
	b = appendStr(b, "error", e.Error)
	if e.Stream {
		b = append(b, `,"stream":true`...)
	}
	b = appendInt(b, "attempts", int64(e.Attempts))
	b = appendInt(b, "prompt_tokens", e.PromptTokens)
	b = appendInt(b, "completion_tokens", e.CompletionTokens)
	b = appendInt(b, "price_micro_sek", e.PriceMicroSEK)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, e.Duration)
	if e.TTFT > 0 {
		b = append(b, `,"ttft_ms":`...)
		b = appendMillis(b, e.TTFT)
	}
	return append(b, "}\n"...)
}

// appendMillis appends d in milliseconds with up to three decimals, trailing zeros left out
// ("0.412", "1.5", "2"): what strconv.AppendFloat(float64(d.Microseconds())/1000, 'f', -1)
// writes, from integers (the shortest float formatting was a tenth of a line's cost).
func appendMillis(b []byte, d time.Duration) []byte {
	us := d.Microseconds()
	if us < 0 {
		b = append(b, '-')
		us = -us // a duration's microseconds are far from math.MinInt64
	}
	b = strconv.AppendInt(b, us/1000, 10)
	frac := us % 1000
	if frac == 0 {
		return b
	}
	digits := [4]byte{'.', byte('0' + frac/100), byte('0' + frac/10%10), byte('0' + frac%10)}
	n := len(digits)
	for digits[n-1] == '0' {
		n--
	}
	return append(b, digits[:n]...)
}

func appendStr(b []byte, k, v string) []byte {
	if v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, '"', ':')
	return jsonenc.AppendString(b, v)
}

func appendInt(b []byte, k string, v int64) []byte {
	if v == 0 {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, k...)
	b = append(b, '"', ':')
	return strconv.AppendInt(b, v, 10)
}

// Thresholds of the flusher's buffer.
const (
	flushAt     = 64 << 10 // lines waiting that make the flush goroutine write at once
	maxBuffered = 8 << 20  // lines waiting past which new ones are dropped
	maxSpare    = 1 << 20  // largest written buffer kept for reuse
)

// flusher is the buffered destination: handlers append whole lines under mu; only the
// flush goroutine (and Close) writes to w, outside mu, from a buffer swapped out.
type flusher struct {
	mu      sync.Mutex
	buf     []byte // lines waiting
	spare   []byte // a written buffer, reused for the next lines
	dropped atomic.Int64
	full    chan struct{} // capacity 1: flushAt reached
	wmu     sync.Mutex    // one write to w at a time
	w       io.Writer
}

func (f *flusher) Write(p []byte) (int, error) {
	f.mu.Lock()
	if len(f.buf)+len(p) > maxBuffered {
		f.mu.Unlock()
		f.dropped.Add(1)
		return len(p), nil
	}
	if f.buf == nil {
		f.buf, f.spare = f.spare[:0], nil
	}
	f.buf = append(f.buf, p...)
	n := len(f.buf)
	f.mu.Unlock()
	if n >= flushAt {
		select {
		case f.full <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// flush writes the lines waiting.
func (f *flusher) flush() error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	f.mu.Lock()
	b := f.buf
	f.buf = nil
	f.mu.Unlock()
	if len(b) == 0 {
		return nil
	}
	_, err := f.w.Write(b)
	if cap(b) <= maxSpare {
		f.mu.Lock()
		f.spare = b[:0]
		f.mu.Unlock()
	}
	return err
}
