package proxy

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestBoundLengths: every length field a server may read is brought within the bound;
// fields within it, and bodies without server fields, are left alone.
func TestBoundLengths(t *testing.T) {
	cases := []struct {
		name, body string
		want       map[string]int64 // field -> value after (absent: must stay absent)
		same       bool
	}{
		{"interface field only", `{"max_tokens":1}`, map[string]int64{"max_tokens": 1}, true},
		{"llama.cpp n_predict over", `{"max_tokens":1,"n_predict":2000,"stream":true}`, map[string]int64{"max_tokens": 1, "n_predict": 1}, false},
		{"n_predict unlimited", `{"n_predict":-1}`, map[string]int64{"n_predict": 7}, false},
		{"n_predict within", `{"n_predict":3}`, map[string]int64{"n_predict": 3}, true},
		{"both interface fields differ", `{"max_tokens":9,"max_completion_tokens":1}`, map[string]int64{"max_tokens": 1, "max_completion_tokens": 1}, false},
		{"tgi max_new_tokens", `{"max_new_tokens":1e9}`, map[string]int64{"max_new_tokens": 7}, false},
		{"ollama options", `{"options":{"num_predict":100}}`, map[string]int64{"options.num_predict": 7}, false},
		{"ollama top level", `{"num_predict":"many"}`, map[string]int64{"num_predict": 7}, false},
		{"fractional", `{"n_predict":2.5}`, map[string]int64{"n_predict": 7}, false},
		{"null left", `{"n_predict":null}`, nil, true},
	}
	for _, c := range cases {
		bound := int64(7)
		if c.name == "llama.cpp n_predict over" || c.name == "both interface fields differ" {
			bound = 1
		}
		got, err := BoundLengths([]byte(c.body), bound)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.same != (string(got) == c.body) {
			t.Errorf("%s: body %s (changed: %v)", c.name, got, !c.same)
		}
		for f, v := range c.want {
			if g := gjson.GetBytes(got, f); g.Int() != v || g.Type != gjson.Number {
				t.Errorf("%s: %s = %s, want %d", c.name, f, g.Raw, v)
			}
		}
	}
}
