package scrape

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
