package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/VictoriaMetrics/metrics"
)

// Routed requests are counted per endpoint and result, with their tokens and durations.
func TestRequestMetrics(t *testing.T) {
	set := metrics.NewSet()
	g := startGateway(t, func(c *Config) { c.Metrics = set })
	for range 2 {
		if r := g.do(t, "POST", "/v1/chat/completions", g.Keys.SE, chatBody); r.Status != 200 {
			t.Fatalf("%d %s", r.Status, r.Body)
		}
	}
	// A refusal before routing is not a routed request.
	g.do(t, "POST", "/v1/chat/completions", "", chatBody)
	var b bytes.Buffer
	set.WritePrometheus(&b)
	out := b.String()
	for _, want := range []string{
		`gateway_requests_total{endpoint="/v1/chat/completions",result="ok"} 2`,
		`gateway_requests_total{endpoint="/v1/chat/completions",result="upstream_error"} 0`,
		`gateway_tokens_total{endpoint="/v1/chat/completions",kind="prompt"} 24`,
		`gateway_tokens_total{endpoint="/v1/chat/completions",kind="completion"} 6`,
		`gateway_request_duration_seconds_count{endpoint="/v1/chat/completions"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
