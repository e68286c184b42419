package proxy

import (
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// benchChatStream is a chat stream of 100 content chunks, its usage chunk and [DONE]; with
// nullUsage every chunk carries "usage":null, as upstreams asked for usage send it.
func benchChatStream(nullUsage bool) []byte {
	chunk := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"Hej"},"finish_reason":null}]`
	if nullUsage {
		chunk += `,"usage":null`
	}
	var sb strings.Builder
	for range 100 {
		sb.WriteString("data: " + chunk + "}\n\n")
	}
	sb.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":2,"total_tokens":14}}` + "\n\ndata: [DONE]\n\n")
	return []byte(sb.String())
}

// BenchmarkStreamChat reads a 100-chunk chat stream through Stream (usage chunk dropped):
// the SSE reader and the per-event check without the relay's writing.
func BenchmarkStreamChat(b *testing.B) {
	for _, c := range []struct {
		name      string
		nullUsage bool
	}{{"plain", false}, {"usage-null", true}} {
		in := benchChatStream(c.nullUsage)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var resp fasthttp.Response
				resp.SetBodyRaw(in)
				st := OpenStream(&resp, index.EPChat, StreamOptions{DropUsageOnly: true, Bounds: tokens.NewBounds(8192, 0, 1)})
				n := 0
				for !st.Result.Ended {
					if _, err := st.Next(); err != nil {
						b.Fatal(err)
					}
					n++
				}
				st.Close()
				if n != 101 || !st.Result.Ended || st.Result.Err != nil || st.Result.PromptTokens != 12 {
					b.Fatalf("%d events, %+v", n, st.Result)
				}
			}
		})
	}
}

// BenchmarkStreamDialects reads 100-chunk chat streams as the node relays them to a chat
// client (reasoning mirrored, the server detected): plain OpenAI chunks, SGLang's chunks
// with their null members, and vLLM reasoning chunks (each rewritten with the other name).
func BenchmarkStreamDialects(b *testing.B) {
	head := `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,`
	for _, c := range []struct{ name, delta string }{
		{"openai-bare", `"delta":{"content":"Hej"},"finish_reason":null}]}`}, // neither mirrored nor detected
		{"openai", `"delta":{"content":"Hej"},"finish_reason":null}]}`},
		{"sglang-nulls", `"delta":{"role":null,"content":"Hej","reasoning_content":null,"tool_calls":null},"finish_reason":null,"matched_stop":null}],"usage":null}`},
		{"vllm-reasoning", `"delta":{"reasoning":"Hmm"},"finish_reason":null}]}`},
	} {
		var sb strings.Builder
		for range 100 {
			sb.WriteString("data: " + head + c.delta + "\n\n")
		}
		sb.WriteString("data: [DONE]\n\n")
		in := []byte(sb.String())
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in)))
			for b.Loop() {
				var resp fasthttp.Response
				resp.SetBodyRaw(in)
				dialects := c.name != "openai-bare"
				st := OpenStream(&resp, index.EPChat, StreamOptions{DropUsageOnly: true, MirrorReasoning: dialects, Detect: dialects,
					Bounds: tokens.NewBounds(8192, 0, 1)})
				for !st.Result.Ended {
					if _, err := st.Next(); err != nil {
						b.Fatal(err)
					}
				}
				st.Close()
			}
		})
	}
}
