package jsonenc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// AppendString writes the bytes encoding/json's Encoder writes with SetEscapeHTML(false),
// for fixed and random (often invalid UTF-8) input.
func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	in := []string{"", "plain", "quote\" back\\slash", "\n\r\t\b\f\x00\x1f\x7f", "é\u2028\u2029\xff\xfe<&>", "\xe2\x80"}
	r := rand.New(rand.NewPCG(7, 8))
	for range 5000 {
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		in = append(in, string(b))
	}
	for _, s := range in {
		if got, want := AppendString(nil, s), encodingJSON(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, encoding/json writes %q", s, got, want)
		}
	}
}

func encodingJSON(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := AppendString(nil, s), encodingJSON(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: %q, encoding/json writes %q", s, got, want)
		}
	})
}
