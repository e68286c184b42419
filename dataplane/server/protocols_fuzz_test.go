package server

import (
	"encoding/json"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/valyala/fasthttp"

	"github.com/sekgate/gateway/dataplane/reqparse"
)

// fuzzPaths are the endpoints the fuzz target sends bodies to.
var fuzzPaths = []string{"/v1/messages", "/v1/messages/count_tokens", "/v1/responses", "/v1/systemone",
	"/v1/chat/completions", "/v1/completions", "/v1/embeddings"}

// scriptedAnswer answers like a provider speaking every protocol, whole or streamed.
func scriptedAnswer(path string, body []byte) (string, string) {
	stream := gjson.GetBytes(body, "stream").Type == gjson.True
	switch {
	case strings.HasSuffix(path, "/chat/completions") && stream:
		return "text/event-stream", "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hi\"}}]}\n\n" +
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"t1\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n" +
			"data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n" +
			"data: {\"id\":\"c1\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n"
	case strings.HasSuffix(path, "/chat/completions"):
		return "application/json", `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`
	case strings.HasSuffix(path, "/messages") && stream:
		return "text/event-stream", "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":1}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	case strings.HasSuffix(path, "/messages"):
		return "application/json", `{"id":"m","type":"message","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3,"output_tokens":1}}`
	case strings.HasSuffix(path, "/responses") && stream:
		return "text/event-stream", "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n"
	case strings.HasSuffix(path, "/responses"):
		return "application/json", `{"id":"r","object":"response","output":[],"usage":{"input_tokens":3,"output_tokens":1}}`
	}
	return "application/json", `{"model":"m","answers":{},"usage":{"input_tokens":1,"output_tokens":1}}`
}

// FuzzProtocolEndpoints sends arbitrary bodies to each endpoint's handler (in process,
// upstreams scripted): no panic, and every answer that is not a success is the JSON error
// envelope, Messages-style on /v1/messages*.
func FuzzProtocolEndpoints(f *testing.F) {
	seeds := []string{
		msgBody, respBody, sysBody,
		`{"model":"sim-chat","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}],"tools":[{"name":"f","input_schema":{}}]}`,
		`{"model":"sim-chat","stream":true,"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"ok"}]}`,
		`{"model":"acme/sim-chat","max_tokens":1,"system":[{"type":"text","text":"s"}],"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"x"}]}]}`,
		`{"model":"sim-native","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"sim-decider","state":"s","questions":{"q":{"type":"choice","choices":["a"]}}}`,
		`{"model":"sim-chat","messages":[{"role":"user","content":"hi"}],"stream":true}`,
		`{"model":"sim-chat","prompt":"x"}`,
		`{"model":"sim-chat","input":"x"}`,
		`{"model":"sim-native","max_tokens":5,"messages":[],"model":"x"}`,
		strings.Repeat("[", 4096), `{"a":` + strings.Repeat("{\"a\":", 300) + `1`, "", "null", "[]", `"x"`, "{}", "\xff\xfe",
		// hostile values, remote media and extensions (no route of the catalogue opts in)
		`{"model":"sim-chat","messages":[{"role":"user","content":"\ud800"}],"temperature":1e999,"seed":18446744073709551616}`,
		"{\"model\":\"sim-chat\",\"messages\":[{\"role\":\"user\",\"content\":\"\xc3\x28\"}],\"k\xff\":1}",
		`{"model":"sim-chat","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]}]}`,
		`{"model":"sim-chat","max_tokens":5,"messages":[{"role":"user","content":"hi"}],"prompt_embeds":"AA","chat_template_kwargs":{"chat_template":"x"}}`,
		`{"model":"sim-chat","input":[{"role":"user","content":[{"type":"input_text","text":"x"},{"video_url":{"url":"https://x"}}]}],"kv_transfer_params":{}}`,
		`{"model":"sim-chat","messages":[{"role":"user","content":"\ud83d\ude00"}],"seed":-9223372036854775808,"max_tokens":2147483647}`,
	}
	for _, s := range seeds {
		for i := range fuzzPaths {
			f.Add(uint8(i), []byte(s))
		}
	}
	// Whatever reaches a model server is valid UTF-8, has only finite numbers (encoding/json
	// refuses the others) and, read by the gateway's own parser, neither remote media nor a
	// provider extension: no route of this catalogue opts in to either.
	var leak atomic.Pointer[string]
	g := startProtoGatewayAt(f, newRecordingUpstream(f, func(path string, body []byte) (string, string) {
		var v any
		if !utf8.Valid(body) || json.Unmarshal(body, &v) != nil {
			msg := "upstream " + path + " got a body with invalid text or numbers: " + string(body)
			leak.Store(&msg)
		} else if r, err := reqparse.Parse(path, body); err == nil && (r.RemoteMedia != "" || r.ExtensionMask != 0) {
			msg := "upstream " + path + " got remote media or an extension: " + string(body)
			leak.Store(&msg)
		}
		return scriptedAnswer(path, body)
	}))
	h := g.Srv.Handler()
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		if len(body) > reqparse.MaxBodyDefault {
			return
		}
		path := fuzzPaths[int(which)%len(fuzzPaths)]
		var req fasthttp.Request
		req.Header.SetMethod("POST")
		req.SetRequestURI(path)
		req.Header.Set("Authorization", "Bearer "+g.Key)
		req.Header.SetContentType("application/json")
		req.SetBody(body)
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, addr, nil)
		t0 := time.Now()
		h(&ctx)
		status := ctx.Response.StatusCode()
		out := ctx.Response.Body() // runs a stream writer to its end
		if m := leak.Swap(nil); m != nil {
			t.Fatalf("%s with body %q: %s", path, body, *m)
		}
		if d := time.Since(t0); d > 10*time.Second {
			t.Fatalf("%s took %v: status %d %q for body %q", path, d, status, out, body)
		}
		if status >= 200 && status < 300 {
			return
		}
		if status == 500 {
			t.Fatalf("%s: internal error (a handler panicked?): %s", path, out)
		}
		if ct := string(ctx.Response.Header.ContentType()); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("%s: status %d content type %q", path, status, ct)
		}
		env := gjson.ParseBytes(out)
		if !reqparse.ValidJSON(out) || env.Get("error.type").Str == "" || env.Get("error.message").Str == "" {
			t.Fatalf("%s: status %d body not an envelope: %s", path, status, out)
		}
		if ms := strings.HasPrefix(path, "/v1/messages"); ms != (env.Get("type").Str == "error") {
			t.Fatalf("%s: Messages-style envelope %v: %s", path, ms, out)
		}
	})
}
