package simulator

import (
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// engineAdmit passes call c through the engine: it waits for a slot, then sets the call's
// time to first token and generation pace from the engine's model of the request. It
// returns the admission to release, and false when the client went away while waiting.
func (s *Server) engineAdmit(c *call) (admission, bool) {
	out := c.k.OutputTokens
	for _, k := range [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if v := c.root.Get(k); v.Type == gjson.Number && int(v.Int()) < out && v.Int() >= 0 {
			out = int(v.Int())
		}
	}
	a, ok := s.eng.admit(c.ctx, promptTokens(c.root), out)
	if !ok {
		c.cancelled()
		return a, false
	}
	c.k.TTFTMS += int((a.ttft + time.Millisecond/2) / time.Millisecond)
	if d := s.eng.cfg.PerOutputToken; d > 0 {
		c.k.TokensPerSecond = float64(time.Second) / float64(d)
	}
	return a, true
}

// serveMetrics answers GET /metrics in Prometheus text format with vLLM's metric names
// (vllm/v1/metrics/loggers.py): requests running and waiting, KV-cache use, prefix-cache
// queries and hits in tokens, finished requests, and the histograms of the time finished
// requests spent in prefill and running (request_prefill_time_seconds,
// request_inference_time_seconds; one +Inf bucket each, as the gateway reads only the sum
// and count). Without an engine every gauge is 0.
// With one, the cache's size is in vllm:cache_config_info's labels block_size and
// num_gpu_blocks, as vLLM's info gauge of its cache configuration has them (loggers.py,
// log_metrics_info("cache_config", ...); tests/entrypoints/openai/test_metrics.py expects it).
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method not allowed", false)
		return
	}
	var st engineStats
	if s.eng != nil {
		st = s.eng.stats()
	}
	label := `{model_name="` + s.cfg.Name + `"} `
	b := make([]byte, 0, 1024)
	metric := func(name, typ, help string, v float64) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" "+typ+"\n"+name+label...)
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		b = append(b, '\n')
	}
	metric("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.", float64(st.running))
	metric("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.", float64(st.waiting))
	metric("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.", st.kvUse)
	metric("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.", float64(st.queries))
	metric("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.", float64(st.hits))
	metric("vllm:request_success_total", "counter", "Count of successfully processed requests.", float64(st.done))
	histogram := func(name, help string, sum time.Duration) {
		b = append(b, "# HELP "+name+" "+help+"\n# TYPE "+name+" histogram\n"...)
		lb := label[:len(label)-2] // without "} "
		b = append(b, name+"_bucket"+lb+`,le="+Inf"} `...)
		b = strconv.AppendInt(b, st.done, 10)
		b = append(b, "\n"+name+"_sum"+label...)
		b = strconv.AppendFloat(b, sum.Seconds(), 'g', -1, 64)
		b = append(b, "\n"+name+"_count"+label...)
		b = strconv.AppendInt(b, st.done, 10)
		b = append(b, '\n')
	}
	histogram("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", st.prefillTime)
	histogram("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", st.runTime)
	if s.eng != nil {
		c := s.eng.cfg
		b = append(b, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n# TYPE vllm:cache_config_info gauge\n"...)
		b = append(b, `vllm:cache_config_info{block_size="`+strconv.Itoa(c.BlockTokens)+`",enable_prefix_caching="True",engine="0",num_gpu_blocks="`+strconv.Itoa(c.CacheBlocks)+`"} 1`+"\n"...)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.Write(b)
}

// PrefixCache returns the engine's prefix-cache queries and hits so far, in tokens (0, 0
// without an engine).
func (s *Server) PrefixCache() (queries, hits int64) {
	if s.eng == nil {
		return 0, 0
	}
	st := s.eng.stats()
	return st.queries, st.hits
}

// EngineStats is the engine's state as /metrics reports it, for in-process callers.
type EngineStats struct {
	Running, Waiting int
	// Queries and Hits are prefix-cache tokens; Done counts finished requests.
	Queries, Hits, Done int64
}

// Engine returns the engine's state now (zero without an engine).
func (s *Server) Engine() EngineStats {
	if s.eng == nil {
		return EngineStats{}
	}
	st := s.eng.stats()
	return EngineStats{Running: st.running, Waiting: st.waiting, Queries: st.queries, Hits: st.hits, Done: st.done}
}
