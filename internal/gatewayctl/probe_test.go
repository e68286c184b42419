package gatewayctl

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sekgate/gateway/internal/simulator"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestProbeDialects: a probe of each of the simulator's dialects names the server, its
// window and models, how it reports usage and overflows, and warns where the route
// disagrees.
func TestProbeDialects(t *testing.T) {
	sim := simulator.New(simulator.Config{Models: []string{"qwen3-8b"}})
	if err := sim.Start(context.Background(), "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Close() })
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, d := range simulator.Dialects {
		t.Run(d, func(t *testing.T) {
			r := snapshot.Route{ID: "r1", Model: "qwen3-8b", BaseURL: sim.DialectBaseURL(d), Server: d,
				Protocols: []string{snapshot.EndpointChat}}
			p, err := ProbeRoute(context.Background(), hc, r, "", simulator.DialectContext)
			if err != nil {
				t.Fatal(err)
			}
			if p.Detected != d || len(p.Warnings) != 0 || !p.UsageWhole || !p.UsageFinal || p.UsageUnasked != 0 ||
				!p.ToolCalls || !p.OverflowKnown || p.OverflowStatus == 0 || len(p.Models) != 1 {
				t.Errorf("%+v", p)
			}
			if wantWindow := map[bool]int64{true: simulator.DialectContext}[d == simulator.DialectVLLM || d == simulator.DialectSGLang || d == simulator.DialectLlamaCpp]; p.Window != wantWindow {
				t.Errorf("window %d", p.Window)
			}
			if lines := probeLines(p); len(lines)%2 != 0 {
				t.Errorf("lines %v", lines)
			}
		})
	}
	// A route that names the wrong server, model and window gets a warning for each.
	r := snapshot.Route{ID: "r2", Model: "llama", BaseURL: sim.DialectBaseURL(simulator.DialectSGLang), Server: "vllm",
		Protocols: []string{snapshot.EndpointChat, snapshot.EndpointMessages}}
	p, err := ProbeRoute(context.Background(), hc, r, "", 8192)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(p.Warnings, "\n")
	for _, w := range []string{"set server: sglang", `does not list model "llama"`, "context_tokens is 8192", "lists /v1/messages"} {
		if !strings.Contains(all, w) {
			t.Errorf("no warning %q in %s", w, all)
		}
	}
}
