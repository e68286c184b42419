package dialect

import (
	"slices"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

// TestNamesMatchSnapshot: the route field's valid values are exactly the tables here.
func TestNamesMatchSnapshot(t *testing.T) {
	if !slices.Equal(Names(), snapshot.Servers) {
		t.Fatalf("dialect names %v, snapshot servers %v", Names(), snapshot.Servers)
	}
	for _, n := range Names() {
		s, ok := Parse(n)
		if !ok || s.String() != n || For(s).Server != s {
			t.Errorf("%s: %v %v", n, s, ok)
		}
	}
	if s, ok := Parse(""); !ok || s != OpenAI {
		t.Errorf("empty server field: %v %v", s, ok)
	}
	if _, ok := Parse("vLLM"); ok {
		t.Error("names are lower case")
	}
}

// TestReadError: the five servers' error bodies, plus FastAPI's detail.
func TestReadError(t *testing.T) {
	cases := []struct {
		name, body string
		want       Error
	}{
		{"vllm", `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","param":null,"code":400}}`,
			Error{Status: 400, Message: "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens", Type: "BadRequestError", Overflow: true}},
		{"sglang", `{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}`,
			Error{Status: 400, Message: "The input (5000 tokens) is longer than the model's context length (4096 tokens).", Type: "BadRequestError", Overflow: true}},
		{"llamacpp", `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}`,
			Error{Status: 400, Message: "the request exceeds the available context size, try increasing it (prompt 5000 tokens, context window 4096 tokens)", Type: "exceed_context_size_error", Overflow: true}},
		{"tgi", `{"error":"Input validation error: ` + "`inputs`" + ` must have less than 4096 tokens. Given: 5000","error_type":"validation"}`,
			Error{Message: "Input validation error: `inputs` must have less than 4096 tokens. Given: 5000", Type: "validation"}},
		{"tgi stream", `{"error":{"message":"Request failed during generation","http_status_code":422}}`,
			Error{Status: 422, Message: "Request failed during generation"}},
		{"ollama", `{"error":{"message":"model \"x\" not found","type":"api_error","param":null,"code":null}}`,
			Error{Message: `model "x" not found`, Type: "api_error"}},
		{"openai", `{"error":{"message":"too long","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			Error{Message: "too long", Type: "invalid_request_error", Overflow: true}},
		{"fastapi", `{"detail":[{"loc":["body"],"msg":"field required"}]}`, Error{Message: "field required"}},
	}
	for _, c := range cases {
		got, ok := ReadError([]byte(c.body))
		if !ok || got != c.want {
			t.Errorf("%s: %+v %v, want %+v", c.name, got, ok, c.want)
		}
	}
	for _, b := range []string{``, `[]`, `{"choices":[]}`, `not json`, `{"error":null}`} {
		if e, ok := ReadError([]byte(b)); ok {
			t.Errorf("%q read as %+v", b, e)
		}
	}
}

// FuzzReadError: any body is read without panic, and a status read is an HTTP status.
func FuzzReadError(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"m","code":400}}`))
	f.Add([]byte(`{"object":"error","message":"m","code":"500"}`))
	f.Add([]byte(`{"error":"m","error_type":"validation","http_status_code":422}`))
	f.Add([]byte(`{"detail":[{"msg":"x"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, ok := ReadError(b)
		if !ok && e != (Error{}) {
			t.Fatalf("not an error, but %+v", e)
		}
		if e.Status != 0 && (e.Status < 100 || e.Status > 599) {
			t.Fatalf("status %d", e.Status)
		}
	})
}

// TestDetect: each server's signs, and none in plain OpenAI answers or in text.
func TestDetect(t *testing.T) {
	cases := []struct {
		b    string
		want Server
		ok   bool
	}{
		{`{"choices":[{"delta":{"content":"a"},"matched_stop":null}],"usage":null}`, SGLang, true},
		{`{"choices":[{"delta":{},"finish_reason":"stop","stop_reason":null}]}`, VLLM, true},
		{`{"choices":[],"usage":{"prompt_tokens":1},"timings":{"prompt_n":1}}`, LlamaCpp, true},
		{`{"system_fingerprint":"b5123-2f7a6e1","choices":[]}`, LlamaCpp, true},
		{`{"system_fingerprint":"3.3.4-native","choices":[]}`, TGI, true},
		{`{"system_fingerprint":"fp_ollama","choices":[]}`, Ollama, true},
		{`{"system_fingerprint":"fp_44709d6fcb","choices":[]}`, OpenAI, false},
		{`{"choices":[{"delta":{"content":"say \"stop_reason\" and \"matched_stop\""}}]}`, OpenAI, false},
	}
	for _, c := range cases {
		if s, ok := Detect([]byte(c.b)); s != c.want || ok != c.ok {
			t.Errorf("%s: %v %v", c.b, s, ok)
		}
	}
}
