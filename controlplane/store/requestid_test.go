package store

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzValidRequestID(f *testing.F) {
	for _, s := range []string{"req_a29", "", "\xff", "a\x00b", strings.Repeat("r", 201), "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		valid := id != "" && len(id) <= 200 && utf8.ValidString(id) && strings.IndexByte(id, 0) < 0
		if ValidRequestID(id) != valid {
			t.Fatalf("ValidRequestID(%q) = %v, want %v", id, !valid, valid)
		}
	})
}
