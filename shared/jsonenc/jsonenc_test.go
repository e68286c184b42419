package jsonenc

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// AppendString decodes to the same string encoding/json produces from it, for fixed and
// random (often invalid UTF-8) input.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	in := []string{"", "plain", "quote\" back\\slash", "\n\r\t\x00\x1f", "é\u2028\xff\xfe<&>"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		in = append(in, string(b))
	}
	for _, s := range in {
		got := AppendString(nil, s)
		var a string
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%q: invalid JSON %q: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var b string
		_ = json.Unmarshal(want, &b)
		if a != b {
			t.Fatalf("%q: decodes to %q, encoding/json's to %q", s, a, b)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		var a string
		if err := json.Unmarshal(AppendString(nil, s), &a); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
