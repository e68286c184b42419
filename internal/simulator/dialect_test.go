package simulator

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// dialectPost sends a chat request to dialect d of a simulator behind h.
func dialectPost(t *testing.T, url, d, prompt string, stream bool, extra string) (int, string) {
	t.Helper()
	body := `{"model":"m","messages":[{"role":"user","content":"` + prompt + `"}],"stream":` +
		map[bool]string{true: "true", false: "false"}[stream] + extra + `}`
	resp, err := http.Post(url+"/"+d+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDialectFormats: each dialect's distinguishing marks, streamed and not.
func TestDialectFormats(t *testing.T) {
	ts := httptest.NewServer(New(Config{}).Handler())
	defer ts.Close()
	for _, d := range Dialects {
		st, b := dialectPost(t, ts.URL, d, "hi scenario:plain", false, "")
		if st != 200 || !gjson.Valid(b) || gjson.Get(b, "choices.0.message.content").Str != DialectText("hi scenario:plain") ||
			gjson.Get(b, "usage.completion_tokens").Int() != DialectTextWords || gjson.Get(b, "usage.prompt_tokens").Int() != 2 {
			t.Errorf("%s plain: %d %s", d, st, b)
		}
		st, b = dialectPost(t, ts.URL, d, "hi scenario:reasoning", true, `,"stream_options":{"include_usage":true}`)
		if st != 200 || !strings.Contains(b, "[DONE]") {
			t.Errorf("%s reasoning stream: %d %s", d, st, b)
		}
		if sp := specs[d]; sp.reasoning != "" && !strings.Contains(b, `"`+sp.reasoning+`":" `) {
			t.Errorf("%s: no %s deltas in %s", d, sp.reasoning, b)
		}
		st, b = dialectPost(t, ts.URL, d, "hi scenario:overflow", false, "")
		if st < 400 {
			t.Errorf("%s overflow: %d %s", d, st, b)
		}
	}
	_, b := dialectPost(t, ts.URL, DialectSGLang, "hi", true, "")
	if !strings.Contains(b, `"tool_calls":null`) || !strings.Contains(b, `"usage":null`) || !strings.Contains(b, `"matched_stop":151645`) {
		t.Errorf("sglang nulls: %s", b)
	}
	_, b = dialectPost(t, ts.URL, DialectTGI, "hi scenario:stop", true, `,"stop":["zz"]`)
	if !strings.HasPrefix(b, "data:{") || !strings.Contains(b, `"finish_reason":"stop_sequence"`) {
		t.Errorf("tgi stop: %s", b)
	}
	_, b = dialectPost(t, ts.URL, DialectLlamaCpp, "hi scenario:error", true, "")
	if !strings.Contains(b, "\n\nerror: {") || strings.Contains(b, "[DONE]") {
		t.Errorf("llamacpp error: %s", b)
	}
	_, b = dialectPost(t, ts.URL, DialectVLLM, "hi scenario:sse", true, "")
	if !strings.HasSuffix(b, "data: [DONE]\r\n") || !strings.Contains(b, "data: \r\n\r\n") {
		t.Errorf("sse: %q", b)
	}
}

// FuzzDialectChat feeds arbitrary bodies to every dialect's chat completions: no panic, a
// whole answer or error body is JSON, and a stream's data lines are JSON or [DONE].
func FuzzDialectChat(f *testing.F) {
	for _, seed := range []string{`{`, `[]`, `{"messages":"x"}`, `{"model":"m","messages":[{"role":"user","content":"a scenario:tool"}],"stream":true}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"scenario:stop"}]}],"stop":["a","b"],"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`,
		`{"messages":[{"role":"user","content":"scenario:sse"}],"stream":true}`} {
		for i := range Dialects {
			f.Add(uint8(i), []byte(seed))
		}
	}
	h := New(Config{Name: "fuzz"}).Handler()
	f.Fuzz(func(t *testing.T, d uint8, body []byte) {
		path := "/" + Dialects[int(d)%len(Dialects)] + "/v1/chat/completions"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(string(body))))
		out := rec.Body.String()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			if !gjson.Valid(out) {
				t.Fatalf("%s %q: %d %q", path, body, rec.Code, out)
			}
			return
		}
		for _, line := range strings.Split(out, "\n") {
			line = strings.TrimSpace(line)
			for _, p := range []string{"data:", "error:"} {
				if v, ok := strings.CutPrefix(line, p); ok {
					if v = strings.TrimSpace(v); v != "" && v != "[DONE]" && !gjson.Valid(v) {
						t.Fatalf("%s %q: line %q", path, body, line)
					}
				}
			}
		}
	})
}
