package simulator

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/sekgate/gateway/internal/poll"
	"github.com/tidwall/gjson"
)

func words(prefix string, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return strings.Join(w, " ")
}

func tokensOf(t *testing.T, body string) []uint64 {
	t.Helper()
	return promptTokens(gjson.Parse(body))
}

func TestEnginePrefixCache(t *testing.T) {
	e := newEngine(EngineConfig{Slots: 4, Overhead: 10 * time.Millisecond, PrefillPerToken: time.Millisecond})
	sys := words("s", 40)
	body := func(user string) string {
		return `{"messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"` + user + `"}]}`
	}
	ctx := context.Background()
	first := tokensOf(t, body(words("u", 24))) // 64 tokens: 4 blocks
	if len(first) != 64 {
		t.Fatalf("%d tokens, want 64", len(first))
	}
	a, _ := e.admit(ctx, first, 8)
	if a.ttft != 74*time.Millisecond {
		t.Fatalf("cold ttft %v, want 74ms", a.ttft)
	}
	e.release(a)
	a, _ = e.admit(ctx, first, 8)
	if a.ttft != 10*time.Millisecond {
		t.Fatalf("warm ttft %v, want 10ms (overhead only)", a.ttft)
	}
	e.release(a)
	// Same 40-token system prompt, another question: the first two blocks (32 tokens) hit.
	other := tokensOf(t, body(words("v", 24)))
	a, _ = e.admit(ctx, other, 8)
	if a.ttft != 42*time.Millisecond {
		t.Fatalf("shared-prefix ttft %v, want 42ms", a.ttft)
	}
	e.release(a)
	st := e.stats()
	if st.queries != 192 || st.hits != 96 || st.done != 3 || st.running != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestEngineLRUEvicts(t *testing.T) {
	e := newEngine(EngineConfig{Slots: 1, PrefillPerToken: time.Millisecond, CacheBlocks: 4})
	ctx := context.Background()
	a := tokensOf(t, `{"prompt":"`+words("a", 64)+`"}`)
	b := tokensOf(t, `{"prompt":"`+words("b", 64)+`"}`)
	for _, p := range [][]uint64{a, b} {
		ad, _ := e.admit(ctx, p, 1)
		e.release(ad)
	}
	ad, _ := e.admit(ctx, a, 1)
	if ad.ttft != 64*time.Millisecond {
		t.Fatalf("evicted prompt: ttft %v, want a full prefill", ad.ttft)
	}
	e.release(ad)
}

func TestEngineFIFOQueue(t *testing.T) {
	e := newEngine(EngineConfig{Slots: 1})
	ctx := context.Background()
	first, _ := e.admit(ctx, nil, 1)
	got := make(chan int, 2)
	for i := 1; i <= 2; i++ {
		go func() {
			a, ok := e.admit(ctx, nil, 1)
			if ok {
				got <- i
				e.release(a)
			}
		}()
		waitUntil(t, func() bool { return e.stats().waiting == i })
	}
	// A third waiter that gives up leaves the queue.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan bool)
	go func() {
		_, ok := e.admit(cctx, nil, 1)
		gaveUp <- ok
	}()
	waitUntil(t, func() bool { return e.stats().waiting == 3 })
	cancel()
	if <-gaveUp {
		t.Fatal("cancelled waiter admitted")
	}
	if st := e.stats(); st.waiting != 2 || st.running != 1 {
		t.Fatalf("after cancel: %+v", st)
	}
	e.release(first)
	if a, b := <-got, <-got; a != 1 || b != 2 {
		t.Fatalf("served %d then %d, want FIFO", a, b)
	}
	waitUntil(t, func() bool { st := e.stats(); return st.running == 0 && st.waiting == 0 })
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	poll.Until(t, 10*time.Second, "the engine's condition", cond)
}

// /metrics speaks Prometheus text with vLLM's names, counting the engine's work.
func TestMetricsEndpoint(t *testing.T) {
	s := New(Config{Name: "r0", Engine: EngineConfig{Slots: 2, PrefillPerToken: time.Millisecond}})
	if err := s.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	body := `{"model":"m","messages":[{"role":"user","content":"` + words("w", 40) + `"}]}`
	for range 2 {
		resp, err := http.Post(s.BaseURL()+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := http.Get("http://" + s.Addr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"vllm:num_requests_running": 0, "vllm:num_requests_waiting": 0,
		"vllm:kv_cache_usage_perc": 0, "vllm:prefix_cache_queries_total": 80, "vllm:prefix_cache_hits_total": 32,
		"vllm:request_success_total": 2}
	for name, v := range want {
		f, ok := fams[name]
		if !ok {
			t.Fatalf("no %s", name)
		}
		m := f.GetMetric()[0]
		got := m.GetGauge().GetValue() + m.GetCounter().GetValue()
		if got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	// The histograms of the finished requests' prefill and running time: 80 prompt
	// tokens, 32 of them cached, prefilled at 1 ms each (48 ms); running takes at least
	// as long.
	for name, least := range map[string]float64{"vllm:request_prefill_time_seconds": 0.048, "vllm:request_inference_time_seconds": 0.048} {
		f, ok := fams[name]
		if !ok || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Fatalf("no histogram %s", name)
		}
		h := f.GetMetric()[0].GetHistogram()
		if h.GetSampleCount() != 2 || h.GetSampleSum() < least || name == "vllm:request_prefill_time_seconds" && h.GetSampleSum() > least+1e-9 {
			t.Errorf("%s: count %d sum %v, want 2 and %v", name, h.GetSampleCount(), h.GetSampleSum(), least)
		}
	}
}
