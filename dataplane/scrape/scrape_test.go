package scrape

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/loadstat"
	"github.com/sekgate/gateway/shared/snapshot"
)

func TestParseServers(t *testing.T) {
	tests := []struct {
		name, page string
		want       loadstat.Report
	}{
		{"vllm", `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="llama"} 4.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="llama"} 7.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="llama"} 0.625
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="llama"} 1234.0
`, loadstat.Report{Waiting: 7, Running: 4, KV: 0.625}},
		{"vllm with its cache's size", `vllm:num_requests_running{engine="0",model_name="llama"} 4.0
vllm:num_requests_waiting{engine="0",model_name="llama"} 0.0
# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig
# TYPE vllm:cache_config_info gauge
vllm:cache_config_info{block_size="16",cache_dtype="auto",enable_prefix_caching="True",engine="0",gpu_memory_utilization="0.9",num_gpu_blocks="27713"} 1.0
`, loadstat.Report{Running: 4, KV: -1, CacheTokens: 16 * 27713}},
		{"vllm before its cache is sized", `vllm:num_requests_running{engine="0",model_name="llama"} 1.0
vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="None"} 1.0
`, loadstat.Report{Running: 1, KV: -1}},
		{"vllm with its timing totals", `vllm:num_requests_running{engine="0",model_name="llama"} 2.0
# HELP vllm:request_prefill_time_seconds Histogram of time spent in PREFILL phase for request.
# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_bucket{engine="0",le="0.3",model_name="llama"} 90.0
vllm:request_prefill_time_seconds_bucket{engine="0",le="+Inf",model_name="llama"} 100.0
vllm:request_prefill_time_seconds_count{engine="0",model_name="llama"} 100.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="llama"} 12.5
# TYPE vllm:request_inference_time_seconds histogram
vllm:request_inference_time_seconds_bucket{engine="0",le="+Inf",model_name="llama"} 100.0
vllm:request_inference_time_seconds_count{engine="0",model_name="llama"} 100.0
vllm:request_inference_time_seconds_sum{engine="0",model_name="llama"} 40.25
# TYPE vllm:prefix_cache_queries counter
vllm:prefix_cache_queries_total{engine="0",model_name="llama"} 50000.0
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits_total{engine="0",model_name="llama"} 30000.0
`, loadstat.Report{Running: 2, KV: -1, Timing: loadstat.Timing{PrefillSeconds: 12.5, InferenceSeconds: 40.25,
			Finished: 100, QueriedTokens: 50000, CachedTokens: 30000}}},
		{"vllm with some timing totals only", `vllm:num_requests_running{engine="0",model_name="llama"} 2.0
vllm:request_prefill_time_seconds_sum{engine="0",model_name="llama"} 12.5
vllm:prefix_cache_queries_total{engine="0",model_name="llama"} 50000.0
`, loadstat.Report{Running: 2, KV: -1}},
		{"vllm old, two models", `vllm:num_requests_running{model_name="a"} 1
vllm:num_requests_running{model_name="b"} 2
vllm:num_requests_waiting{model_name="a"} 0
vllm:gpu_cache_usage_perc{model_name="a"} 0.5
`, loadstat.Report{Running: 3, KV: 0.5}},
		{"sglang", `sglang:num_running_reqs{model_name="q"} 12
sglang:num_queue_reqs{model_name="q"} 3
sglang:token_usage{model_name="q"} 0.41
`, loadstat.Report{Waiting: 3, Running: 12, KV: 0.41}},
		{"llama.cpp", `# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 5
`, loadstat.Report{Waiting: 5, Running: 2, KV: -1}},
		{"tgi", `tgi_queue_size 9
tgi_batch_current_size 16
`, loadstat.Report{Waiting: 9, Running: 16, KV: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.page))
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"", "go_goroutines 12\n", "vllm:num_requests_running{ 4\n", "<html>"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func route(id, base, metrics string) *index.Route {
	b, _ := snapshot.ParseBaseURL(base)
	return &index.Route{Route: snapshot.Route{ID: id, BaseURL: base, MetricsURL: metrics}, UpstreamHost: b.Host}
}

// A route in use is read; an idle one, one with reading off and an unreadable one are not
// counted as reported, and the unreadable one counts failures.
func TestScraperReadsRoutesInUse(t *testing.T) {
	page := "vllm:num_requests_waiting 6\nvllm:num_requests_running 4\nvllm:kv_cache_usage_perc 0.9\n"
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(page))
	}))
	defer good.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer broken.Close()

	reg := loadstat.NewRegistry()
	now := time.Unix(1000, 0)
	inUse := reg.For(route("in-use", good.URL+"/v1", ""))
	idle := reg.For(route("idle", good.URL+"/v2", ""))
	off := reg.For(route("off", good.URL+"/v3", "off"))
	bad := reg.For(route("bad", broken.URL+"/v1", ""))
	for _, r := range []*loadstat.Route{inUse, off, bad} {
		r.Start(now.UnixNano())
		r.Done()
	}
	idle.Start(now.Add(-time.Hour).UnixNano())
	idle.Done()

	s := New(Config{Loads: reg, Now: func() time.Time { return now }, Timeout: 5 * time.Second})
	s.Tick(context.Background())
	s.Wait()
	if s.Failures.Load() != 1 {
		t.Fatalf("reads %d failures %d, want 1 failure (broken)", s.Reads.Load(), s.Failures.Load())
	}
	v := inUse.View(now.UnixNano(), time.Second)
	if v.Waiting != 6 || v.Running != 4 || v.KV != 0.9 {
		t.Fatalf("in-use view %+v", v)
	}
	for _, r := range []*loadstat.Route{idle, off, bad} {
		if v := r.View(now.UnixNano(), time.Second); v.Fresh != 0 {
			t.Errorf("%s has a report: %+v", r.ID, v)
		}
	}
	if n := s.Reads.Load(); n != 2 {
		t.Errorf("%d reads, want 2 (in use and broken)", n)
	}
}

// A replica the registry dropped (gone from DNS) is no longer read, and its reading state
// is forgotten.
func TestScraperForgetsDroppedReplicas(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("vllm:num_requests_waiting 1\n"))
	}))
	defer srv.Close()
	reg := loadstat.NewRegistry()
	now := time.Unix(1000, 0)
	for _, id := range []string{"v@10.0.0.5:8000", "v@10.0.0.6:8000"} {
		r := reg.For(route(id, srv.URL+"/"+id, ""))
		r.Start(now.UnixNano())
		r.Done()
	}
	s := New(Config{Loads: reg, Now: func() time.Time { return now }})
	s.Tick(context.Background())
	s.Wait()
	if n := s.Reads.Load(); n != 2 {
		t.Fatalf("reads %d, want 2", n)
	}
	reg.Retain(func(id, _ string) bool { return id == "v@10.0.0.6:8000" })
	s.Tick(context.Background())
	s.Wait()
	s.mu.Lock()
	n := len(s.targets)
	s.mu.Unlock()
	if n != 1 || s.Reads.Load() != 3 {
		t.Fatalf("%d targets, %d reads: want the dropped replica forgotten and unread", n, s.Reads.Load())
	}
}

// vllmPage is a metrics page the size of a vLLM server's: the three load gauges among
// histograms and counters (vllm/v1/metrics/loggers.py exports about a dozen histograms of
// up to 30 buckets per model).
func vllmPage(running, waiting int) []byte {
	var b strings.Builder
	hist := func(name string) {
		fmt.Fprintf(&b, "# HELP vllm:%s Histogram of %s.\n# TYPE vllm:%s histogram\n", name, name, name)
		for i := range 30 {
			fmt.Fprintf(&b, "vllm:%s_bucket{engine=\"0\",le=\"%d.0\",model_name=\"llama\"} %d.0\n", name, 1<<i, i*7)
		}
		fmt.Fprintf(&b, "vllm:%s_bucket{engine=\"0\",le=\"+Inf\",model_name=\"llama\"} 210.0\n", name)
		fmt.Fprintf(&b, "vllm:%s_count{engine=\"0\",model_name=\"llama\"} 210.0\nvllm:%s_sum{engine=\"0\",model_name=\"llama\"} 4321.5\n", name, name)
	}
	for _, h := range []string{"time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds",
		"request_queue_time_seconds", "request_inference_time_seconds", "request_prefill_time_seconds"} {
		hist(h)
	}
	fmt.Fprintf(&b, "# HELP vllm:num_requests_running Number of requests in model execution batches.\n# TYPE vllm:num_requests_running gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_running{engine=\"0\",model_name=\"llama\"} %d.0\n", running)
	fmt.Fprintf(&b, "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.\n# TYPE vllm:num_requests_waiting gauge\n")
	fmt.Fprintf(&b, "vllm:num_requests_waiting{engine=\"0\",model_name=\"llama\"} %d.0\n", waiting)
	fmt.Fprintf(&b, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"llama\"} 0.5\n")
	for _, h := range []string{"request_decode_time_seconds", "request_prompt_tokens", "request_generation_tokens",
		"iteration_tokens_total", "request_max_num_generation_tokens", "request_params_n"} {
		hist(h)
	}
	b.WriteString("# TYPE vllm:prompt_tokens counter\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"llama\"} 98765.0\n")
	return []byte(b.String())
}

// parseWhole is Parse over every family of the page: what Parse must equal whenever the
// whole page parses.
func parseWhole(page []byte) (loadstat.Report, error) {
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return loadstat.Report{}, err
	}
	var lines bytes.Buffer
	enc := expfmt.NewEncoder(&lines, expfmt.NewFormat(expfmt.TypeTextPlain))
	for name, f := range fams {
		if _, ok := known[name]; ok || known[name+"_sum"] != 0 { // a histogram whose sum is read
			if err := enc.Encode(f); err != nil {
				return loadstat.Report{}, err
			}
		}
	}
	return Parse(lines.Bytes())
}

func TestParseReadsOnlyLoadLines(t *testing.T) {
	page := vllmPage(3, 5)
	got, err := Parse(page)
	if err != nil {
		t.Fatal(err)
	}
	if want := (loadstat.Report{Running: 3, Waiting: 5, KV: 0.5}); got != want {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
	if n := len(loadLines(nil, page, false)); n*20 > len(page) {
		t.Fatalf("%d of the page's %d bytes kept for the parser, want under 5 %%", n, len(page))
	}
	// A malformed line of a metric the node does not read costs nothing, and one of the
	// cache's size costs only the size.
	for _, line := range []string{"vllm:iteration_tokens_total{broken 1\n", "vllm:cache_config_info{broken 1\n",
		"vllm:request_prefill_time_seconds_sum{broken 1\n"} {
		if got, err := Parse(append([]byte(line), page...)); err != nil || got.Running != 3 || got.CacheTokens != 0 {
			t.Fatalf("Parse with a broken line %q = %+v, %v", line, got, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(vllmPage(4, 7))
	f.Add([]byte("vllm:num_requests_running 1\n# TYPE vllm:request_prefill_time_seconds histogram\n" +
		"vllm:request_prefill_time_seconds_sum 1.5\nvllm:request_inference_time_seconds_sum 4\n" +
		"vllm:request_inference_time_seconds_count 10\n# TYPE vllm:prefix_cache_queries counter\n" +
		"vllm:prefix_cache_queries_total 10\nvllm:prefix_cache_hits_total 4\n"))
	f.Add([]byte("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 2\nsglang:num_queue_reqs 1\n"))
	f.Add([]byte("llamacpp:requests_processing 1\n# HELP llamacpp:requests_deferred x\nllamacpp:requests_deferred 2"))
	f.Add([]byte("#TYPE tgi_queue_size gauge\ntgi_queue_size{a=\"}\"} 3\n\ttgi_batch_current_size 4 1700000000\n"))
	f.Fuzz(func(t *testing.T, page []byte) {
		got, err := Parse(page)
		if err == nil && (got.Waiting < 0 || got.Running < 0 || got.KV > 1) {
			t.Fatalf("Parse = %+v", got)
		}
		want, werr := parseWhole(page)
		if werr != nil {
			return // the whole page is not valid: Parse may still read its load lines
		}
		// The timing totals are read from their sample lines by name, whatever the page
		// declares of their histograms (a malformed # TYPE line can make the text parser
		// read a plain sample as a histogram's sum): the table tests pin them.
		got.Timing, want.Timing = loadstat.Timing{}, loadstat.Timing{}
		if err != nil || got != want {
			t.Fatalf("Parse = %+v, %v; over the whole page %+v", got, err, want)
		}
	})
}

func BenchmarkParseVLLMPage(b *testing.B) {
	page := vllmPage(3, 5)
	b.SetBytes(int64(len(page)))
	b.Run("load lines", func(b *testing.B) {
		for b.Loop() {
			if _, err := Parse(page); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole page", func(b *testing.B) {
		for b.Loop() {
			var p expfmt.TextParser
			if _, err := p.TextToMetricFamilies(bytes.NewReader(page)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A load registry's reports count in full as long as the node's would at the default
// interval: the bench's nodes and a node started with defaults judge alike.
func TestRegistryFreshForIsTheDefaultIntervals(t *testing.T) {
	if got, want := loadstat.NewRegistry().FreshFor, FreshFor(DefaultInterval); got != want {
		t.Fatalf("loadstat.NewRegistry().FreshFor = %v, scrape.FreshFor(DefaultInterval) = %v", got, want)
	}
}
