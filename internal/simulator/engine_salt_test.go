package simulator

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// cache_salt partitions the prefix cache as vLLM's does: a second request hits the first's
// blocks only when both carry the same salt or neither carries one.
func TestEngineCacheSalt(t *testing.T) {
	prompt := words("s", 64) // 4 blocks
	body := func(salt string) string {
		b := `{"model":"m","prompt":"` + prompt + `"`
		if salt != "" {
			b += `,"cache_salt":"` + salt + `"`
		}
		return b + `}`
	}
	for _, tc := range []struct {
		name          string
		first, second string
		hits          int64
	}{
		{"no salt twice", "", "", 64},
		{"same salt", "a1", "a1", 64},
		{"different salts", "a1", "b2", 0},
		{"salt then none", "a1", "", 0},
		{"none then salt", "", "a1", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(EngineConfig{Slots: 1, PrefillPerToken: time.Millisecond})
			ctx := context.Background()
			a, _ := e.admit(ctx, tokensOf(t, body(tc.first)), 1)
			e.release(a)
			a, _ = e.admit(ctx, tokensOf(t, body(tc.second)), 1)
			e.release(a)
			if st := e.stats(); st.hits != tc.hits {
				t.Fatalf("hits %d tokens, want %d", st.hits, tc.hits)
			}
			if want := time.Duration(64-tc.hits) * time.Millisecond; a.ttft != want {
				t.Fatalf("second ttft %v, want %v", a.ttft, want)
			}
		})
	}
}

// A cache_salt that is not a non-empty string is refused with 400, as vLLM refuses it.
func TestCacheSaltChecked(t *testing.T) {
	s := startSim(t, Knobs{})
	for _, salt := range []string{`""`, `7`, `null`, `["a"]`} {
		st, _, b := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Hej"}],"cache_salt":`+salt+`}`)
		if st != http.StatusBadRequest {
			t.Errorf("cache_salt %s: status %d, body %s", salt, st, b)
		}
	}
	if st, _, b := post(t, s, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Hej"}],"cache_salt":"a1"}`); st != http.StatusOK {
		t.Errorf("a string cache_salt: status %d, body %s", st, b)
	}
}
