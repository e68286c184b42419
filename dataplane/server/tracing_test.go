package server

import (
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sekgate/gateway/dataplane/tracing"
	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// otlpReceiver is an in-process OTLP/HTTP traces endpoint keeping the spans it receives.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", 400)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func spanAttr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetStringValue()
		}
	}
	return ""
}

// A traced request continues the client's trace: the request span is the child of the
// client's traceparent, each upstream attempt a child of it whose traceparent the upstream
// receives, the spool write a child too, and every span carries the request ID.
func TestTracingPropagatesTraceparent(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	var seenMu sync.Mutex
	var seen []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seenMu.Lock()
		seen = append(seen, r.Header.Get("Traceparent"))
		seenMu.Unlock()
		if strings.HasPrefix(r.URL.Path, "/first/") {
			http.Error(w, "overloaded", 503) // fails over to the second route
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Hej!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}`)
	}))
	defer up.Close()
	tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: collector.URL + "/v1/traces", SampleRatio: 0, NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	g := startSimGateway(t, []snapshot.Route{chatRoute("a", "pa", up.URL+"/first", "SE", 0, 1), chatRoute("b", "pb", up.URL+"/v1", "SE", 1, 1)},
		func(c *Config) { c.Tracer = tr })
	const clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	const clientSpan = "00f067aa0ba902b7"
	r := g.post(t, g.Keys.SE, chatPlainReq, "Traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	if r.Status != 200 {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	reqID := r.Header.Get("X-Request-Id")
	g.record(t, 1)
	if err := tr.Shutdown(context.Background()); err != nil { // flushes the batch
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	byName := map[string][]*tracepb.Span{}
	for _, s := range recv.spans {
		byName[s.Name] = append(byName[s.Name], s)
		if hex.EncodeToString(s.TraceId) != clientTrace {
			t.Errorf("span %q is in trace %x, not the client's", s.Name, s.TraceId)
		}
		if spanAttr(s, "gateway.request_id") != reqID {
			t.Errorf("span %q carries request ID %q, want %q", s.Name, spanAttr(s, "gateway.request_id"), reqID)
		}
	}
	root := byName["POST /v1/chat/completions"]
	if len(root) != 1 || hex.EncodeToString(root[0].ParentSpanId) != clientSpan || root[0].Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Fatalf("request span: %v (spans %v)", root, byName)
	}
	attempts := append(byName["upstream a"], byName["upstream b"]...)
	if len(attempts) != 2 || len(byName["spool write"]) != 1 {
		t.Fatalf("want two attempt spans and a spool write, got %v", byName)
	}
	seenMu.Lock()
	defer seenMu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("upstream saw %d requests", len(seen))
	}
	for i, a := range attempts {
		if string(a.ParentSpanId) != string(root[0].SpanId) {
			t.Errorf("attempt %q is not a child of the request span", a.Name)
		}
		want := "00-" + clientTrace + "-" + hex.EncodeToString(a.SpanId) + "-01"
		if seen[i] != want {
			t.Errorf("upstream saw traceparent %q, want %q (attempt %q)", seen[i], want, a.Name)
		}
	}
	if byName["upstream a"][0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || spanAttr(root[0], "gateway.result") != "ok" {
		t.Error("the failed attempt is not marked failed, or the request span lacks its result")
	}
}

// A Messages-style request on a chat route gets a translation span beside its attempt.
func TestTracingTranslationSpan(t *testing.T) {
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()
	up := startSim(t, "up", simulator.Knobs{})
	r := chatRoute("rt_tr", "tr-se", up.BaseURL(), "SE", 0, 1)
	r.Translate = true
	tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: collector.URL + "/v1/traces", SampleRatio: 1, NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	g := startSimGateway(t, []snapshot.Route{r}, func(c *Config) { c.Tracer = tr })
	req, _ := http.NewRequest("POST", g.URL+"/v1/messages", strings.NewReader(`{"model":"llama8b","max_tokens":4,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("x-api-key", g.Keys.SE)
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	g.record(t, 1)
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	names := map[string]*tracepb.Span{}
	for _, s := range recv.spans {
		names[s.Name] = s
	}
	root, tl := names["POST /v1/messages"], names["translate"]
	if root == nil || tl == nil || names["upstream rt_tr"] == nil || names["spool write"] == nil {
		t.Fatalf("spans %v", names)
	}
	if string(tl.ParentSpanId) != string(root.SpanId) || spanAttr(tl, "gateway.request_id") != resp.Header.Get("X-Request-Id") {
		t.Error("the translation span is not the request's child or lacks its request ID")
	}
}
