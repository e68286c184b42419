package dialect

import (
	"testing"

	"github.com/sekgate/gateway/dataplane/index"
	"github.com/sekgate/gateway/shared/snapshot"
)

// TestDialectMemoGivesUp: a route's answers are searched for their server until one shows
// it or detectTries answers showed none; then the route keeps the default table (a
// plain OpenAI-compatible server) and its answers are no longer searched. A named server
// is never searched.
func TestDialectMemoGivesUp(t *testing.T) {
	plain := []byte(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hej"},"finish_reason":"stop"}]}`)
	vllm := []byte(`{"id":"x","choices":[{"index":0,"message":{"content":"hej"},"finish_reason":"stop","stop_reason":null}]}`)
	cases := []struct {
		name    string
		server  string
		answers [][]byte
		want    Server
		open    bool
	}{
		{"first answer shows it", "", [][]byte{vllm}, VLLM, false},
		{"shown before the bound", "", append(slicesRepeat(plain, detectTries-1), vllm), VLLM, false},
		{"none shown: still open", "", slicesRepeat(plain, detectTries-1), OpenAI, true},
		{"none shown: given up", "", slicesRepeat(plain, detectTries), OpenAI, false},
		{"shown after giving up", "", append(slicesRepeat(plain, detectTries), vllm), OpenAI, false},
		{"named", "sglang", [][]byte{vllm}, SGLang, false},
	}
	for _, c := range cases {
		var dm Memo
		r := &index.Route{Route: snapshot.Route{ID: "r", BaseURL: "http://u/v1", Server: c.server}}
		for _, b := range c.answers {
			dm.Learn(r, b)
		}
		if got := dm.Of(r).Server; got != c.want {
			t.Errorf("%s: server %v, want %v", c.name, got, c.want)
		}
		if got := dm.Detecting(r); got != c.open {
			t.Errorf("%s: detecting %v, want %v", c.name, got, c.open)
		}
		// Another base URL of the same route is a new server.
		if r.Server == "" && !dm.Detecting(&index.Route{Route: snapshot.Route{ID: "r", BaseURL: "http://other/v1"}}) {
			t.Errorf("%s: a new base URL is not searched", c.name)
		}
	}
}

func slicesRepeat(b []byte, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = b
	}
	return out
}
