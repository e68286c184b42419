package server

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/internal/fixture"
	"github.com/sekgate/gateway/dataplane/proxy"
	"github.com/sekgate/gateway/dataplane/relay"
)

// BenchmarkTranslatedMessagesNonStreaming drives a Messages-style request through the
// fixture's chat route that allows translation, in process: auth, parse, translation to
// chat completions, sent over a pooled connection, translation of the answer back and
// the record.
func BenchmarkTranslatedMessagesNonStreaming(b *testing.B) {
	p := newInProcess(b, true)
	body := []byte(`{"model":"` + fixture.ModelChat + `","max_tokens":64,"system":"be brief","messages":[{"role":"user","content":"` + strings.Repeat("Hej hopp ", 100) + `"}]}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if st := p.post("/v1/messages", "x-api-key", p.keys.SE, body); st != 200 {
			b.Fatalf("status %d: %s", st, p.ctx.Response.Body())
		}
	}
	if p.meter.n == 0 {
		b.Fatal("nothing recorded")
	}
}

// BenchmarkTranslatedStreamRelay translates a 100-chunk chat stream into Messages-style
// events written to a discarding writer, flushing per event.
func BenchmarkTranslatedStreamRelay(b *testing.B) { benchTranslatedRelay(b, index.EPMessages) }

// BenchmarkTranslatedStreamRelayResponses is BenchmarkTranslatedStreamRelay into
// Responses-style events.
func BenchmarkTranslatedStreamRelayResponses(b *testing.B) {
	benchTranslatedRelay(b, index.EPResponses)
}

func benchTranslatedRelay(b *testing.B, client index.Endpoint) {
	in := chatStream100()
	w := bufio.NewWriter(io.Discard)
	p := relay.Protocol{Client: client, Translate: true, Model: "m"}
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		var resp fasthttp.Response
		resp.SetBodyRaw(in)
		st := proxy.OpenStream(&resp, index.EPChat, proxy.StreamOptions{})
		rel := p.Relay(w, st)
		st.Close()
		if !rel.Done || rel.Err != nil || st.Result.PromptTokens != 12 {
			b.Fatalf("%+v %+v", st.Result, rel)
		}
	}
}
