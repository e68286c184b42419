// Package scrape reads the load model servers report on their Prometheus metrics endpoints
// into the node's load state (dataplane/loadstat): requests waiting and running and
// KV-cache use, under the metric names of vLLM, SGLang, llama.cpp server and TGI. A route
// is read every Interval while this node sends it requests (it was used within Idle), and
// only then. A read that fails or times out changes nothing but a counter: the report
// already held fades with age (loadstat.View) and the route keeps serving.
package scrape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/sekgate/gateway/dataplane/loadstat"
)

// DefaultInterval is how often a route in use is read: as often as the Gateway API
// inference extension's endpoint picker reads each model server (its
// --refreshMetricsInterval, 50 ms). Nodes of a fleet act on the same reports, so a
// request the others started since the last report is what they misjudge: at 50 ms that
// is a quarter of what it was at 200 ms (docs/routing.md, "Fleet"). A read parses only the
// load lines (Parse): about 24 µs for a vLLM page.
const DefaultInterval = 50 * time.Millisecond

// FreshFor is how long a report read every interval counts in full: 3¾ intervals, so a
// late or failed read or two keep it (loadstat.Registry.FreshFor).
func FreshFor(interval time.Duration) time.Duration { return interval * 15 / 4 }

// Config configures a Scraper. Zero fields take the defaults noted.
type Config struct {
	// Loads is the node's load state (required).
	Loads *loadstat.Registry
	// Interval between reads of one route's metrics (default DefaultInterval).
	Interval time.Duration
	// Idle stops reading a route this node has not sent a request for this long
	// (default 30s).
	Idle time.Duration
	// Timeout bounds one read (default 1s; a route is not read again while a read runs).
	Timeout time.Duration
	// MaxBytes bounds a metrics page read (default 1 MiB; the rest is ignored).
	MaxBytes int64
	// Client makes the requests (default: a client with its own transport).
	Client *http.Client
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Scraper reads the routes' metrics; see Run.
type Scraper struct {
	cfg     Config
	mu      sync.Mutex
	targets map[*loadstat.Route]*target
	reading sync.WaitGroup // the reads started and not ended (Wait)
	// Reads and Failures count reads made and failed (metrics, tests).
	Reads, Failures atomic.Int64
}

// target is one route's reading state.
type target struct {
	busy atomic.Bool
	buf  bytes.Buffer
}

// New returns a Scraper with cfg's defaults filled.
func New(cfg Config) *Scraper {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 30 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = 1 << 20
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Scraper{cfg: cfg, targets: make(map[*loadstat.Route]*target)}
}

// Run reads every route in use each Interval until ctx ends. Reads of different routes
// run in parallel; a route whose last read is still running is skipped.
func (s *Scraper) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.Tick(ctx)
	}
}

// Tick starts one read of every route in use (Run calls it each Interval).
func (s *Scraper) Tick(ctx context.Context) {
	now := s.cfg.Now().UnixNano()
	routes := 0
	s.cfg.Loads.Each(func(r *loadstat.Route) {
		routes++
		if r.MetricsURL == "" || now-r.LastUsed() > int64(s.cfg.Idle) {
			return
		}
		tg := s.target(r)
		if !tg.busy.CompareAndSwap(false, true) {
			return
		}
		s.reading.Add(1)
		go func() {
			defer s.reading.Done()
			defer tg.busy.Store(false)
			s.read(ctx, r, tg)
		}()
	})
	s.prune(routes)
}

// Wait waits for the reads started so far to end (each within Timeout).
func (s *Scraper) Wait() { s.reading.Wait() }

// prune forgets the reading state of routes the registry dropped (replicas gone from
// DNS, loadstat.Registry.Retain), once there are more targets than routes.
func (s *Scraper) prune(routes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.targets) <= routes {
		return
	}
	live := make(map[*loadstat.Route]bool, routes)
	s.cfg.Loads.Each(func(r *loadstat.Route) { live[r] = true })
	for r := range s.targets {
		if !live[r] {
			delete(s.targets, r)
		}
	}
}

func (s *Scraper) target(r *loadstat.Route) *target {
	s.mu.Lock()
	defer s.mu.Unlock()
	tg := s.targets[r]
	if tg == nil {
		tg = &target{}
		s.targets[r] = tg
	}
	return tg
}

// read reads route r's metrics once into its load state.
func (s *Scraper) read(ctx context.Context, r *loadstat.Route, tg *target) {
	s.Reads.Add(1)
	before := r.InFlight()
	rep, err := s.fetch(ctx, r.MetricsURL, &tg.buf)
	if err != nil {
		s.Failures.Add(1)
		r.ScrapeFailed()
		if s.cfg.Logger.Enabled(ctx, slog.LevelDebug) {
			s.cfg.Logger.Debug("route metrics unreadable", "route", r.ID, "err", err)
		}
		return
	}
	r.SetServer(rep, s.cfg.Now().UnixNano(), before)
}

// errNoLoad: the page has none of the known load metrics.
var errNoLoad = errors.New("no known load metric on the page")

func (s *Scraper) fetch(ctx context.Context, url string, buf *bytes.Buffer) (loadstat.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return loadstat.Report{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return loadstat.Report{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return loadstat.Report{}, fmt.Errorf("scrape %s: status %d", url, resp.StatusCode)
	}
	buf.Reset()
	if _, err := buf.ReadFrom(io.LimitReader(resp.Body, s.cfg.MaxBytes)); err != nil {
		return loadstat.Report{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	return Parse(buf.Bytes())
}

// Parse reads the load metrics of a Prometheus text page: the page's waiting and running
// requests, each summed over its series (several models on one server), and its KV-cache
// use (the largest series). Only the lines of the known metrics are parsed (loadLines), by
// prometheus/common/expfmt's parser: a vLLM page is mostly histograms, which are never
// read. It fails when those lines do not parse or there are none. The KV cache's size
// (vLLM's vllm:cache_config_info) and the server's timing totals (loadstat.Timing) are
// parsed apart: a page without them, or with a line of them that does not parse, says
// nothing of the size and timings but still reports the load.
func Parse(page []byte) (loadstat.Report, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(loadLines(make([]byte, 0, 1024), page, false)))
	if err != nil {
		return loadstat.Report{}, fmt.Errorf("metrics page: %w", err)
	}
	rep := loadstat.Report{KV: -1}
	if extra := loadLines(nil, page, true); len(extra) > 0 {
		if cf, err := p.TextToMetricFamilies(bytes.NewReader(extra)); err == nil {
			for name, f := range cf {
				fams[name] = f
			}
		}
	}
	var timing [timingKinds]bool
	found := false
	for name, f := range fams {
		kind, ok := known[name]
		if !ok {
			continue
		}
		for _, m := range f.GetMetric() {
			if kind == cacheConfig {
				rep.CacheTokens = max(rep.CacheTokens, cacheTokens(m.GetLabel()))
				continue
			}
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			if v != v || v < 0 || v > 1e15 { // NaN, nonsense
				continue
			}
			if kind >= prefillSeconds {
				timing[kind-prefillSeconds] = true
				addTiming(&rep.Timing, kind, v)
				continue
			}
			found = true
			switch kind {
			case waiting:
				rep.Waiting += int64(v + 0.5)
			case running:
				rep.Running += int64(v + 0.5)
			case kvUse: // one cache per server; vLLM versions in transition report both names
				rep.KV = max(rep.KV, min(v, 1))
			}
		}
	}
	if !found {
		return loadstat.Report{}, errNoLoad
	}
	if timing != [timingKinds]bool{true, true, true, true, true} {
		rep.Timing = loadstat.Timing{} // all or nothing: one total alone says nothing
	}
	return rep, nil
}

// addTiming adds v, a sample of timing total kind, to t.
func addTiming(t *loadstat.Timing, kind metricKind, v float64) {
	switch kind {
	case prefillSeconds:
		t.PrefillSeconds += v
	case inferenceSeconds:
		t.InferenceSeconds += v
	case inferenceCount:
		t.Finished += int64(v + 0.5)
	case cacheQueries:
		t.QueriedTokens += int64(v + 0.5)
	case cacheHits:
		t.CachedTokens += int64(v + 0.5)
	}
}

type metricKind uint8

const (
	waiting metricKind = iota
	running
	kvUse
	cacheConfig // an info gauge: the size is in its labels (cacheTokens)
	// The timing totals (loadstat.Timing), in this order; every one of them or none.
	prefillSeconds
	inferenceSeconds
	inferenceCount
	cacheQueries
	cacheHits
)

// timingKinds is the number of timing totals.
const timingKinds = 5

// extra reports whether kind's lines are parsed apart from the load's (Parse).
func (k metricKind) extra() bool { return k >= cacheConfig }

// cacheTokens is a prefix cache's size in tokens from the labels of vLLM's
// vllm:cache_config_info (num_gpu_blocks times block_size); 0 when they are missing or
// not whole numbers (vLLM says "None" before the cache is sized).
func cacheTokens(labels []*dto.LabelPair) int64 {
	var blocks, size int64
	for _, l := range labels {
		n, err := strconv.ParseInt(l.GetValue(), 10, 64)
		if err != nil || n <= 0 || n > 1<<40 {
			continue
		}
		switch l.GetName() {
		case "num_gpu_blocks":
			blocks = n
		case "block_size":
			size = n
		}
	}
	if blocks == 0 || size == 0 || blocks > 1<<40/size {
		return 0
	}
	return blocks * size
}

// known maps the servers' load metrics to what they measure:
//   - vLLM (vllm/v1/metrics/loggers.py; gpu_cache_usage_perc before v0.10):
//     vllm:num_requests_waiting, vllm:num_requests_running, vllm:kv_cache_usage_perc, and
//     the cache's size in vllm:cache_config_info's labels; and the timing totals: the
//     sums of its histograms of the time finished requests spent in prefill and running
//     (request_prefill_time_seconds, request_inference_time_seconds) and the count of
//     the latter, and its prefix cache's queried and hit tokens;
//   - SGLang (python/sglang/srt/metrics/collector.py): sglang:num_queue_reqs,
//     sglang:num_running_reqs, sglang:token_usage;
//   - llama.cpp server (tools/server/server.cpp, --metrics): llamacpp:requests_deferred,
//     llamacpp:requests_processing;
//   - TGI (router/src/infer/mod.rs, queue.rs): tgi_queue_size, tgi_batch_current_size.
var known = map[string]metricKind{
	"vllm:num_requests_waiting": waiting,
	"vllm:num_requests_running": running,
	"vllm:kv_cache_usage_perc":  kvUse,
	"vllm:gpu_cache_usage_perc": kvUse,
	"vllm:cache_config_info":    cacheConfig,
	// Histograms' sums and counts read as untyped samples: their # TYPE lines name the
	// histogram, which is not read, and their buckets are not needed.
	"vllm:request_prefill_time_seconds_sum":     prefillSeconds,
	"vllm:request_inference_time_seconds_sum":   inferenceSeconds,
	"vllm:request_inference_time_seconds_count": inferenceCount,
	"vllm:prefix_cache_queries_total":           cacheQueries,
	"vllm:prefix_cache_hits_total":              cacheHits,
	"sglang:num_queue_reqs":                     waiting,
	"sglang:num_running_reqs":                   running,
	"sglang:token_usage":                        kvUse,
	"llamacpp:requests_deferred":                waiting,
	"llamacpp:requests_processing":              running,
	"tgi_queue_size":                            waiting,
	"tgi_batch_current_size":                    running,
}

// loadLines appends to dst the lines of page that speak of a known metric, in their order:
// its samples and its # TYPE and # HELP lines, each ended by a newline; those parsed apart
// only (extra: the cache's size and the timing totals) or all others.
func loadLines(dst, page []byte, extra bool) []byte {
	for len(page) > 0 {
		line := page
		if i := bytes.IndexByte(page, '\n'); i >= 0 {
			line, page = page[:i], page[i+1:]
		} else {
			page = nil
		}
		if kind, ok := known[string(lineMetric(line))]; ok && kind.extra() == extra {
			dst = append(append(dst, line...), '\n')
		}
	}
	return dst
}

// lineMetric is the metric a line of a text page names: a sample's name, or the name a
// # TYPE or # HELP line describes; nil for other comments and blank lines.
func lineMetric(line []byte) []byte {
	line = bytes.TrimLeft(line, " \t")
	if len(line) > 0 && line[0] == '#' {
		line = bytes.TrimLeft(line[1:], " \t")
		if !bytes.HasPrefix(line, []byte("TYPE")) && !bytes.HasPrefix(line, []byte("HELP")) {
			return nil
		}
		line = bytes.TrimLeft(line[4:], " \t")
	}
	end := bytes.IndexFunc(line, func(r rune) bool { return !nameByte(r) })
	if end < 0 {
		return line
	}
	return line[:end]
}

// nameByte reports whether r may be part of a metric's name ([a-zA-Z0-9_:]): a name ends
// at the first other one, whether a label set, a blank or the value's sign follows
// ("name+1" is a sample of name, as the text parser reads it).
func nameByte(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == ':'
}
