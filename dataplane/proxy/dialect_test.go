package proxy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/dialect"
	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/dataplane/tokens"
)

// TestStreamReportedErrors: each server's way of reporting an error inside a 200 stream
// ends the stream with a ReportedError carrying the server's message and status, after the
// events before it; [DONE] after the error is not read.
func TestStreamReportedErrors(t *testing.T) {
	chunk := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"
	cases := []struct {
		name, in, msg string
		status        int
		overflow      bool
	}{
		{"vllm", chunk + "data: {\"error\":{\"object\":\"error\",\"message\":\"boom\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}\n\ndata: [DONE]\n\n", "boom", 400, false},
		{"sglang", chunk + "data: {\"object\":\"error\",\"error\":{\"message\":\"oom\",\"type\":\"InternalServerError\",\"code\":500}}\n\ndata: [DONE]\n\n", "oom", 500, false},
		{"tgi", chunk + "data:{\"error\":{\"message\":\"Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`\",\"http_status_code\":422}}\n\n", "Input validation error", 422, true},
		{"tgi old", chunk + "data:{\"error\":\"Request failed during generation: CUDA OOM\",\"error_type\":\"generation\"}\n\n", "CUDA OOM", 0, false},
		{"llamacpp", chunk + "error: {\"code\":500,\"message\":\"slot unavailable\",\"type\":\"server_error\"}\n\n", "slot unavailable", 500, false},
		{"ollama", chunk + "data: {\"error\":{\"message\":\"model runner stopped\",\"type\":\"api_error\",\"param\":null,\"code\":null}}\n\n", "model runner stopped", 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var resp fasthttp.Response
			resp.SetBodyString(c.in)
			st := OpenStream(&resp, index.EPChat, StreamOptions{Bounds: tokens.NewBounds(100, 10, 1)})
			events, deltas := readAll(st)
			st.Close()
			re, ok := Reported(st.Result.Err)
			if !ok || events != 1 || deltas != 1 || st.Result.Ended { // the first chunk carries "a"
				t.Fatalf("%+v events %d deltas %d", st.Result, events, deltas)
			}
			if !strings.Contains(re.Info.Message, c.msg) || re.Info.Status != c.status || re.Info.Overflow != c.overflow {
				t.Errorf("reported %+v", re.Info)
			}
		})
	}
}

// TestStreamNulls: SGLang's null members and empty keep-alive frames are not events to
// relay or errors.
func TestStreamNulls(t *testing.T) {
	in := "data: \n\n: ping\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":null,\"tool_calls\":null},\"matched_stop\":null}],\"usage\":null}\n\n" +
		"data: {\"error\":null,\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\",\"tool_calls\":null},\"finish_reason\":\"stop\",\"matched_stop\":null}],\"usage\":null}\n\n" +
		"data: [DONE]"
	var resp fasthttp.Response
	resp.SetBodyString(in + "\n")
	st := OpenStream(&resp, index.EPChat, StreamOptions{Detect: true})
	events, _ := readAll(st)
	st.Close()
	if events != 3 || !st.Result.Ended || st.Result.Err != nil || st.Result.PromptReported {
		t.Fatalf("%+v events %d", st.Result, events)
	}
	if !st.Result.ServerDetected || st.Result.Server != dialect.SGLang {
		t.Errorf("detected %v %v", st.Result.Server, st.Result.ServerDetected) // from the chunks' matched_stop
	}
}

// TestStripRunningUsage: the running usage the gateway asked for leaves the chunks that
// carry choices; it is still read for billing.
func TestStripRunningUsage(t *testing.T) {
	in := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n" +
		"data: [DONE]\n\n"
	var resp fasthttp.Response
	resp.SetBodyString(in)
	st := OpenStream(&resp, index.EPChat, StreamOptions{StripRunningUsage: true, Bounds: tokens.NewBounds(100, 10, 1)})
	var raws []string
	for {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		raws = append(raws, string(ev.Raw))
		if st.Result.Ended {
			break
		}
	}
	st.Close()
	want := []string{"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2}}\n\n", "data: [DONE]\n\n"}
	if strings.Join(raws, "|") != strings.Join(want, "|") || st.Result.CompletionTokens != 2 {
		t.Fatalf("%q %+v", raws, st.Result)
	}
}

// TestMirrorReasoning: the other name is added where one is given, per choice.
func TestMirrorReasoning(t *testing.T) {
	cases := []struct{ in, member, want string }{
		{`{"choices":[{"index":0,"delta":{"reasoning":"a"}}]}`, "delta", `{"choices":[{"index":0,"delta":{"reasoning":"a","reasoning_content":"a"}}]}`},
		{`{"choices":[{"delta":{"reasoning_content":"b","reasoning":null}}]}`, "delta", ``}, // a null member is left: the client reads the other
		{`{"choices":[{"delta":{"reasoning_content":"b"}},{"delta":{"content":"x"}},{"delta":{"reasoning":"\u00e5"}}]}`, "delta",
			`{"choices":[{"delta":{"reasoning_content":"b","reasoning":"b"}},{"delta":{"content":"x"}},{"delta":{"reasoning":"\u00e5","reasoning_content":"\u00e5"}}]}`},
		{`{"choices":[{"message":{"content":"x","reasoning_content":null}}]}`, "message", ``},
		{`{"choices":[{"delta":{"reasoning":"a","reasoning_content":"c"}}]}`, "delta", ``},
	}
	for _, c := range cases {
		got, ok := MirrorReasoning(nil, []byte(c.in), c.member)
		if ok != (c.want != "") || ok && string(got) != c.want {
			t.Errorf("%s: %s %v", c.in, got, ok)
		}
	}
}

// FuzzMirrorReasoning: any chunk is read without panic; a changed chunk stays valid JSON.
func FuzzMirrorReasoning(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"reasoning":"a"}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"reasoning_content":"a"}},{"message":{"reasoning":"b"}}]}`))
	f.Add([]byte(`{"choices":null,"reasoning":1}`))
	f.Add([]byte(`{"choices":[{"finish_reason":"eos_token","x":"\"finish_reason\":\"stop_sequence\""}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if !gjson.ValidBytes(b) {
			return
		}
		for _, m := range []string{"delta", "message"} {
			if out, ok := MirrorReasoning(nil, b, m); ok && !gjson.ValidBytes(out) {
				t.Fatalf("%s -> invalid %s", b, out)
			}
		}
		if out, ok := NormalizeFinish(nil, b, []string{"stop_sequence", "eos_token"}); ok && !gjson.ValidBytes(out) {
			t.Fatalf("%s -> invalid %s", b, out)
		}
	})
}

// TestNativeErrorEvents: the error events of the Messages and Responses protocols end a
// native stream as the server's reported error.
func TestNativeErrorEvents(t *testing.T) {
	for _, c := range []struct {
		e  index.Endpoint
		in string
	}{
		{index.EPMessages, "event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n"},
		{index.EPResponses, "event: response.created\ndata: {}\n\nevent: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"busy\",\"param\":null}\n\n"},
	} {
		var resp fasthttp.Response
		resp.SetBodyString(c.in)
		st := OpenStream(&resp, c.e, StreamOptions{})
		events, _ := readAll(st)
		st.Close()
		if re, ok := Reported(st.Result.Err); !ok || re.Info.Message != "busy" || events != 1 {
			t.Errorf("%v: %+v events %d", c.e, st.Result, events)
		}
	}
}

// TestNormalizeFinish: a server's own natural-end finish reasons read "stop".
func TestNormalizeFinish(t *testing.T) {
	stop := []string{"stop_sequence", "eos_token"}
	for _, c := range []struct{ in, want string }{
		{`{"choices":[{"delta":{},"finish_reason":"stop_sequence"}]}`, `{"choices":[{"delta":{},"finish_reason":"stop"}]}`},
		{`{"choices":[{"finish_reason":"eos_token"},{"finish_reason":"length"},{"finish_reason":"stop_sequence"}]}`,
			`{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"},{"finish_reason":"stop"}]}`},
		{`{"choices":[{"finish_reason":"stop_sequences"}]}`, ``},
		{`{"choices":[{"finish_reason":null}]}`, ``},
		// Only the member of that name: not one whose name ends in it, nor text.
		{`{"choices":[{"native_finish_reason":"eos_token","finish_reason":"eos_token"}]}`,
			`{"choices":[{"native_finish_reason":"eos_token","finish_reason":"stop"}]}`},
		{`{"choices":[{"message":{"content":"finish_reason\":\"eos_token"},"native_finish_reason":"eos_token"}]}`, ``},
	} {
		got, ok := NormalizeFinish(nil, []byte(c.in), stop)
		if ok != (c.want != "") || ok && string(got) != c.want {
			t.Errorf("%s: %s %v", c.in, got, ok)
		}
	}
}

// TestIndexQuoted: the first place of a key with its opening quote, as bytes.Index finds it.
func TestIndexQuoted(t *testing.T) {
	key := []byte(`"reasoning`)
	for _, b := range []string{``, `"`, `reasoning`, `"reasoning`, `x"reasoning`, `reasoning "reasoning`,
		`{"a":"reasoningreasoning","reasoning_content":"r"}`, `xreasoning"reasoning`, `""reasoning`} {
		if got, want := indexQuoted([]byte(b), key), bytes.Index([]byte(b), key); got != want {
			t.Errorf("%q: %d, want %d", b, got, want)
		}
	}
}
