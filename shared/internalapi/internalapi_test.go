package internalapi

import (
	"strings"
	"testing"
)

func TestValidRegion(t *testing.T) {
	for r, want := range map[string]bool{
		"": true, "se-sto": true, "eu-fra-1": true, "a": true, strings.Repeat("a", 63): true,
		strings.Repeat("a", 64): false, "SE-STO": false, "se sto": false, "-se": false, "se-": false,
		"sé": false, "se_sto": false, "se\x00": false,
	} {
		if got := ValidRegion(r); got != want {
			t.Errorf("ValidRegion(%q) = %v, want %v", r, got, want)
		}
	}
}

// FuzzValidRegion: what ValidRegion admits from a node's poll is safe to store and show:
// at most 63 bytes of lower-case letters, digits and inner '-'.
func FuzzValidRegion(f *testing.F) {
	for _, s := range []string{"", "se-sto", "-", "A", "é", strings.Repeat("z", 64)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, r string) {
		if !ValidRegion(r) {
			return
		}
		if len(r) > 63 || strings.Trim(r, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" || strings.HasPrefix(r, "-") || strings.HasSuffix(r, "-") {
			t.Fatalf("ValidRegion admitted %q", r)
		}
	})
}
