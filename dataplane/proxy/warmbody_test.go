package proxy

import (
	"testing"

	"github.com/tidwall/gjson"

	"github.com/sekgate/gateway/dataplane/index"
)

// A warm-up copy asks for one token, unstreamed, whatever the length fields the body has;
// the prompt and everything else are the request's own; other endpoints have none.
func TestWarmBody(t *testing.T) {
	cases := []struct {
		name, body string
		e          index.Endpoint
		ok         bool
	}{
		{"chat stream", `{"model":"m","messages":[{"role":"system","content":"be brief"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":500,"n":3,"cache_salt":"s"}`, index.EPChat, true},
		{"chat completion tokens", `{"model":"m","messages":[],"max_completion_tokens":64,"min_tokens":10}`, index.EPChat, true},
		{"llama.cpp n_predict", `{"model":"m","prompt":"x","n_predict":-1,"best_of":4}`, index.EPCompletions, true},
		{"ollama options", `{"model":"m","messages":[],"options":{"num_predict":300}}`, index.EPChat, true},
		{"messages", `{"model":"m","system":"s","messages":[],"max_tokens":1024,"stream":true}`, index.EPMessages, true},
		{"embeddings", `{"model":"m","input":"x"}`, index.EPEmbeddings, false},
		{"responses", `{"model":"m","input":"x"}`, index.EPResponses, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(c.body)
			got, ok := WarmBody(in, c.e)
			if ok != c.ok {
				t.Fatalf("ok %v, want %v", ok, c.ok)
			}
			if !ok {
				return
			}
			if string(in) != c.body {
				t.Fatal("the request's own body was changed")
			}
			j := gjson.ParseBytes(got)
			if j.Get("max_tokens").Int() != 1 || j.Get("stream").Type != gjson.False {
				t.Fatalf("copy %s: want max_tokens 1 and stream false", got)
			}
			for _, f := range lengthFields {
				if v := j.Get(f); v.Exists() && v.Int() != 1 {
					t.Fatalf("copy %s: %s is %s", got, f, v.Raw)
				}
			}
			for _, f := range warmDrop {
				if j.Get(f).Exists() {
					t.Fatalf("copy %s keeps %s", got, f)
				}
			}
			for _, f := range []string{"model", "messages", "prompt", "system", "cache_salt"} {
				if a, b := gjson.Get(c.body, f), j.Get(f); a.Raw != b.Raw {
					t.Fatalf("copy's %s is %s, the request's %s", f, b.Raw, a.Raw)
				}
			}
		})
	}
}
