package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sekgate/gateway/dataplane/accesslog"
	"github.com/sekgate/gateway/dataplane/tracing"
)

// BenchmarkChatObserved is BenchmarkChatNonStreaming with the observability parts off and
// on, in one run: "bare" without metrics (a nil registry), "metrics" the default,
// "metrics+accesslog" with every request's JSON line (to io.Discard, through the buffer),
// and tracing with every request sampled, exported to an in-process collector.
func BenchmarkChatObserved(b *testing.B) {
	for _, c := range []struct {
		name string
		conf func(*Config)
	}{
		{"bare", nil},
		{"metrics", nil},
		{"metrics+accesslog", func(c *Config) {
			c.AccessLog = accesslog.New(accesslog.Config{Writer: io.Discard, JSON: true})
			b.Cleanup(func() { c.AccessLog.Close() })
		}},
		{"metrics+tracing", func(c *Config) { c.Tracer = benchTracer(b) }},
		{"metrics+accesslog+tracing", func(c *Config) {
			c.AccessLog = accesslog.New(accesslog.Config{Writer: io.Discard, JSON: true})
			b.Cleanup(func() { c.AccessLog.Close() })
			c.Tracer = benchTracer(b)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := newInProcessWith(b, false, c.conf)
			if c.name == "bare" {
				p.srv.tel = nil // a nil *telemetry.Metrics records nothing
			}
			b.ReportAllocs()
			for b.Loop() {
				if st := p.post("/v1/chat/completions", "Authorization", "Bearer "+p.keys.SE, chatBenchBody); st != 200 {
					b.Fatalf("status %d: %s", st, p.ctx.Response.Body())
				}
			}
		})
	}
}

// benchTracer traces every request to a collector that accepts and drops the spans.
func benchTracer(b *testing.B) *tracing.Tracer {
	col := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	tr, err := tracing.New(context.Background(), tracing.Config{Endpoint: col.URL + "/v1/traces", SampleRatio: 1, NodeID: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tr.Shutdown(context.Background()); col.Close() })
	return tr
}
