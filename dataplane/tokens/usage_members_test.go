package tokens

import (
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzMembers holds the one-pass lookup to gjson's Get, key by key: the same value (raw
// text and type) or nothing, for any JSON text (answers and events are checked to be JSON
// before their usage is read), repeated names and escaped names included.
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}`,
		`{"prompt_tokens":1,"prompt_tokens":9,"total_tokens":null}`,
		`{"prompt\u005ftokens":4,"completion_tokens":"x","input_tokens":{"a":1}}`,
		`{"input_tokens":5,"cache_creation_input_tokens":6,"cache_read_input_tokens":7,"output_tokens":8}`,
		`{}`, `[1,2]`, `7`, `{"total_tokens":`, `{"a":[{"prompt_tokens":1}],"output_tokens":2}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !gjson.Valid(s) {
			return
		}
		r := gjson.Parse(s)
		for _, keys := range [][]string{chatKeys[:], messagesKeys[:], responsesKeys[:]} {
			out := make([]gjson.Result, len(keys))
			members(r, keys, out)
			for i, k := range keys {
				want := r.Get(k)
				if out[i].Raw != want.Raw || out[i].Type != want.Type {
					t.Fatalf("%s: members gives %q (%v), Get gives %q (%v)", k, out[i].Raw, out[i].Type, want.Raw, want.Type)
				}
			}
		}
	})
}
