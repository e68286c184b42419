package proxy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// outputChunks are chunk shapes of the servers (as internal/simulator/dialect_serve.go
// writes them, from each server's source) with the outputs each carries.
var outputChunks = []struct {
	name string
	text bool // a text completion chunk
	ev   string
	want int64
}{
	{"vllm role", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null,"stop_reason":null}]}`, 0},
	{"vllm content", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" Hej"},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`, 1},
	{"vllm reasoning", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning":"think"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}`, 1},
	{"vllm last", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`, 0},
	{"vllm last with empty content", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"length","stop_reason":null}]}`, 0},
	{"sglang role", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`, 0},
	{"sglang reasoning", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"reasoning_content":"think","role":null,"content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`, 1},
	{"sglang last", false, `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":null,"content":null,"reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":"stop","matched_stop":151645}],"usage":null}`, 0},
	{"sglang tool head", false, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}],"role":null,"content":null,"reasoning_content":null}}]}`, 0}, // a name alone (from the request) is not output
	{"tool arguments", false, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": \"Stock"}}]}}]}`, 1},
	{"tool call without name or arguments", false, `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"arguments":""}}]}}]}`, 0},
	{"empty tool calls", false, `{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}`, 0},
	{"legacy function_call", false, `{"choices":[{"index":0,"delta":{"function_call":{"arguments":"{\"a"}}}]}`, 1},
	{"refusal", false, `{"choices":[{"index":0,"delta":{"refusal":"No"}}]}`, 1},
	{"llamacpp role", false, `{"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`, 0},
	{"llamacpp reasoning", false, `{"choices":[{"finish_reason":null,"index":0,"delta":{"reasoning_content":"think"}}],"created":1,"id":"c","model":"m","object":"chat.completion.chunk"}`, 1},
	{"llamacpp usage", false, `{"choices":[],"created":1,"id":"c","model":"m","object":"chat.completion.chunk","usage":{"completion_tokens":4,"prompt_tokens":2,"total_tokens":6},"timings":{"prompt_n":2,"predicted_n":4}}`, 0},
	{"tgi content", false, `{"object":"chat.completion.chunk","id":"","created":1,"model":"m","system_fingerprint":"3.3.4-native","choices":[{"index":0,"delta":{"role":"assistant","content":"Hej"},"logprobs":null,"finish_reason":null}],"usage":null}`, 1},
	{"tgi last", false, `{"object":"chat.completion.chunk","id":"","created":1,"model":"m","system_fingerprint":"3.3.4-native","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":"stop_sequence"}],"usage":null}`, 0},
	{"ollama content", false, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"Hej"},"finish_reason":null}]}`, 1},
	{"ollama last", false, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`, 0},
	{"ollama reasoning", false, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"think"},"finish_reason":null}]}`, 1},
	{"two choices with output", false, `{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`, 2},
	{"second choice's role", false, `{"choices":[{"index":1,"delta":{"role":"assistant","content":""}}]}`, 0},
	{"content in logprobs only", false, `{"choices":[{"index":0,"delta":{},"logprobs":{"content":[{"token":"a","logprob":-0.1}]}}]}`, 0},
	{"escaped quote before a key", false, `{"choices":[{"index":0,"delta":{"x":"\\\"content\":\"y","content":""}}]}`, 0},
	{"escaped key", false, `{"choices":[{"index":0,"delta":{"cont\u0065nt":"a"}}]}`, 1},
	{"spaces", false, "{ \"choices\" : [ { \"delta\" : { \"content\" : \"a\" } } ] }", 1},
	{"leading space", false, ` {"choices":[{"delta":{"content":"a"}}]}`, 1},
	{"choices null", false, `{"choices":null}`, 0},
	{"completion text", true, `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" Hej","logprobs":null,"finish_reason":null}]}`, 1},
	{"completion last", true, `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":null,"finish_reason":"length"}]}`, 0},
	{"completion usage", true, `{"id":"c","object":"text_completion","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":2,"completion_tokens":1,"total_tokens":3}}`, 0},
}

// TestChunkOutputs: each chunk shape counts the outputs it carries, and the bytes of its
// text as a standard JSON decoder reads them.
func TestChunkOutputs(t *testing.T) {
	for _, c := range outputChunks {
		e := index.EPChat
		if c.text {
			e = index.EPCompletions
		}
		var resp fasthttp.Response
		resp.SetBodyString("data: " + c.ev + "\n\n")
		st := OpenStream(&resp, e, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1)})
		_, pieces := readAll(st)
		st.Close()
		if pieces != c.want {
			t.Errorf("%s: %d outputs, want %d", c.name, pieces, c.want)
		}
		want := stdChunkOutput(t, []byte(gjson.Get(c.ev, "choices").Raw), c.text)
		if got := st.Delivered(); got != want {
			t.Errorf("%s: delivered %+v, a standard decoder reads %+v", c.name, got, want)
		}
	}
}

// TestCutStreamDeltas: a stream cut after some chunks (the upstream broke, the client
// left) counts exactly the outputs its chunks carried, for every server's shapes; the
// role chunk before them and the empty chunk Ollama ends a failing stream with count none.
func TestCutStreamDeltas(t *testing.T) {
	for _, c := range []struct {
		name   string
		chunks []string
		want   int64
	}{
		{"vllm", []string{outputChunks[0].ev, outputChunks[2].ev, outputChunks[1].ev}, 2},
		{"sglang", []string{outputChunks[5].ev, outputChunks[6].ev, outputChunks[8].ev, outputChunks[9].ev}, 2},
		{"llamacpp", []string{outputChunks[14].ev, outputChunks[15].ev, outputChunks[15].ev}, 2},
		{"tgi", []string{outputChunks[17].ev, outputChunks[17].ev}, 2},
		{"ollama", []string{outputChunks[19].ev, outputChunks[21].ev, outputChunks[20].ev}, 2},
	} {
		var sb strings.Builder
		for _, ch := range c.chunks {
			sb.WriteString("data: " + ch + "\n\n")
		}
		var resp fasthttp.Response
		resp.SetBodyString(sb.String())
		st := OpenStream(&resp, index.EPChat, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1), MirrorReasoning: true})
		events, deltas := readAll(st)
		st.Close()
		if events != len(c.chunks) || deltas != c.want || st.Result.Ended {
			t.Errorf("%s: %d events, %d deltas (ended %v), want %d, %d", c.name, events, deltas, st.Result.Ended, len(c.chunks), c.want)
		}
	}
}

// FuzzChunkOutputs: on any valid chat or completion event, the output read from the scan
// is what a standard decoder reads, or the event is rejected for a duplicated member
// (where a standard decoder keeps the last value), and reading never panics.
func FuzzChunkOutputs(f *testing.F) {
	for _, c := range outputChunks {
		f.Add(c.ev, c.text)
	}
	f.Add(`{"choices":[{"delta":{"content":"","content":"a"}}]}`, false)
	f.Add(`{"choices":[{"delta":{"tool_calls":{"a":{"function":{"name":"x"}}}}}]}`, false)
	f.Add(`{"choices":[{"delta":{}},{"delta":{"content":"a"}},3,null]}`, false)
	f.Add(`{"choices":[{"delta":{"c\u006fntent":"\u00e4\ud83d\ude00x"}}]}`, false)
	f.Fuzz(func(t *testing.T, ev string, text bool) {
		ch := []byte(ev)
		got, ok := chunkOutput(ch, text)
		if !ok || !gjson.Valid(ev) || !json.Valid(ch) {
			return // a duplicated member: rejected
		}
		if want := stdChunkOutput(t, ch, text); got != want {
			t.Fatalf("%.300q: delivered %+v, a standard decoder reads %+v", ev, got, want)
		}
	})
}

// BenchmarkChunkOutputs is the output count of a typical chunk's choices.
func BenchmarkChunkOutputs(b *testing.B) {
	for _, c := range []struct{ name, ev string }{
		{"openai", chatEventSeeds[0]}, {"vllm", outputChunks[1].ev},
	} {
		ch := []byte(gjson.Get(c.ev, "choices").Raw)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _ := chunkOutput(ch, false); d.Pieces != 1 {
					b.Fatal("no output")
				}
			}
		})
	}
}
