package server

import (
	"io"
	"testing"

	"github.com/sekgate/gateway/dataplane/accesslog"
)

// BenchmarkChatObserved is BenchmarkChatNonStreaming with the observability parts off and
// on, in one run: "bare" without metrics (a nil registry), "metrics" the default, and
// "metrics+accesslog" with every request's JSON line (to io.Discard, through the buffer).
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
