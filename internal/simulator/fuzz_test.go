package simulator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

var fuzzPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses", "/v1/messages", "/v1/systemone"}

// FuzzInference feeds arbitrary bodies to every endpoint: no panic (other than the
// deliberate connection abort of the fault knobs), and every non-streaming answer is JSON
// unless the body asked for a malformed one.
func FuzzInference(f *testing.F) {
	for _, seed := range []string{
		chatBody, chatStream, `{`, `[]`, `null`, `{"model":1}`, `{"model":"m","messages":"x"}`,
		`{"model":"m","stream":true,"tools":` + weatherTool + `,"messages":[{"role":"user","content":"weather"}]}`,
		`{"model":"e","input":["a",1,{"x":2}],"encoding_format":"base64","dimensions":3}`,
		`{"model":"r","input":[{"type":"function_call_output","output":[{"text":"x"}]}],"stream":true}`,
		`{"model":"a","max_tokens":3,"system":[{"type":"text","text":"s"}],"messages":[{"role":"user","content":[{"type":"tool_result","content":[{"type":"text","text":"r"}]}]}]}`,
		`{"model":"d","state":"s","questions":{"a":{"type":"choice","choices":[1]},"b":{"type":"noul"}}}`,
		`{"model":"m","sim":{"status":503,"fail_after_events":2,"output_tokens":"x"},"messages":[{"role":"user","content":"\u0000\ud800"}]}`,
	} {
		for i := range fuzzPaths {
			f.Add(uint8(i), []byte(seed))
		}
	}
	s := New(Config{Name: "fuzz"})
	f.Fuzz(func(t *testing.T, pathIdx uint8, body []byte) {
		path := fuzzPaths[int(pathIdx)%len(fuzzPaths)]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, path, strings.NewReader(string(body)))
		rec := httptest.NewRecorder()
		aborted := false
		func() {
			defer func() {
				if r := recover(); r != nil {
					if r != http.ErrAbortHandler {
						panic(r)
					}
					aborted = true
				}
			}()
			s.Handler().ServeHTTP(rec, req)
		}()
		if aborted || ctx.Err() != nil {
			return
		}
		var k Knobs
		k.override(nil, gjson.ParseBytes(body))
		if rec.Header().Get("Content-Type") == "application/json" && !k.Malformed && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: status %d, invalid JSON %q", path, body, rec.Code, rec.Body.Bytes())
		}
		if rec.Code >= 400 && !strings.Contains(rec.Body.String(), `"error"`) {
			t.Fatalf("%s %q: status %d without envelope: %q", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}

func BenchmarkChatNonStreaming(b *testing.B) {
	s := New(Config{Name: "bench"})
	h := s.Handler()
	body := `{"model":"llama-3.1-8b-instruct","messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Summarise the benefits of running inference in Sweden in three sentences."}],"max_tokens":64}`
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

func BenchmarkChatNonStreamingHTTP(b *testing.B) {
	s := startSim(b, Knobs{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	body := `{"model":"llama-3.1-8b-instruct","messages":[{"role":"user","content":"Summarise the benefits of running inference in Sweden."}]}`
	url := "http://" + s.Addr() + "/v1/chat/completions"
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := client.Post(url, "application/json", strings.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			var sink [4096]byte
			for {
				if _, err := resp.Body.Read(sink[:]); err != nil {
					break
				}
			}
			resp.Body.Close()
		}
	})
}
