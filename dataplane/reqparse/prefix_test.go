package reqparse

import (
	"strings"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

func TestPrefixSpans(t *testing.T) {
	long := strings.Repeat("x", 10000)
	tests := []struct {
		name, endpoint, body string
		prefix, cacheKey     string
	}{
		{"chat system messages", snapshot.EndpointChat,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"developer","content":"d"},{"role":"user","content":"hi"}]}`,
			`{"role":"system","content":"be brief"},{"role":"developer","content":"d"}`, ""},
		{"chat without system: first message", snapshot.EndpointChat,
			`{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}`,
			`{"role":"user","content":"hi"}`, ""},
		{"chat prompt_cache_key", snapshot.EndpointChat,
			`{"model":"m","prompt_cache_key":"tenant-7","messages":[{"role":"user","content":"hi"}]}`,
			`{"role":"user","content":"hi"}`, `"tenant-7"`},
		{"chat long system", snapshot.EndpointChat,
			`{"model":"m","messages":[{"role":"system","content":"` + long + `"}]}`,
			`{"role":"system","content":"` + long + `"}`, ""},
		{"messages system", snapshot.EndpointMessages,
			`{"model":"m","max_tokens":5,"system":"sys","messages":[{"role":"user","content":"hi"}]}`,
			`"sys"`, ""},
		{"messages first message", snapshot.EndpointMessages,
			`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`,
			`{"role":"user","content":"hi"}`, ""},
		{"responses instructions", snapshot.EndpointResponses,
			`{"model":"m","instructions":"inst","input":"hello","prompt_cache_key":"k"}`,
			`"inst"`, `"k"`},
		{"responses input string", snapshot.EndpointResponses,
			`{"model":"m","input":"hello"}`, `"hello"`, ""},
		{"completions", snapshot.EndpointCompletions,
			`{"model":"m","prompt":"once upon"}`, `"once upon"`, ""},
		{"embeddings: none", snapshot.EndpointEmbeddings,
			`{"model":"m","input":"x"}`, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := []byte(tt.body)
			r, err := Parse(tt.endpoint, body)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := string(r.Prefix.In(body)); got != tt.prefix {
				t.Errorf("prefix %q, want %q", got, tt.prefix)
			}
			if got := string(r.CacheKey.In(body)); got != tt.cacheKey {
				t.Errorf("cache key %q, want %q", got, tt.cacheKey)
			}
		})
	}
}

func TestPromptCacheKeyMustBeString(t *testing.T) {
	_, err := Parse(snapshot.EndpointChat, []byte(`{"model":"m","prompt_cache_key":5,"messages":[{"role":"user","content":"hi"}]}`))
	if err == nil || err.Param != "prompt_cache_key" {
		t.Fatalf("err %v, want prompt_cache_key refused", err)
	}
}
