package internalapi

import (
	"strings"
	"testing"
	"time"
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

func TestSpoolAge(t *testing.T) {
	for v, want := range map[string]int64{
		"0": 0, "1500": 1500, "315360000000": 315360000000,
		"": -1, "-1": -1, "+5": -1, "1.5": -1, "1e3": -1, "315360000001": -1, "99999999999999": -1, " 1": -1,
	} {
		d, ok := ParseSpoolAge(v)
		if (want < 0) == ok || (ok && d != time.Duration(want)*time.Millisecond) {
			t.Errorf("ParseSpoolAge(%q) = %v, %v; want %d ms", v, d, ok, want)
		}
	}
	for d, want := range map[time.Duration]string{-time.Second: "0", 0: "0", 1500 * time.Millisecond: "1500", 2 * MaxSpoolAge: "315360000000"} {
		if got := FormatSpoolAge(d); got != want {
			t.Errorf("FormatSpoolAge(%v) = %q, want %q", d, got, want)
		}
	}
}

// FuzzParseSpoolAge: an admitted header value is a whole number of milliseconds within
// 0..MaxSpoolAge that formats back to itself.
func FuzzParseSpoolAge(f *testing.F) {
	for _, s := range []string{"0", "1500", "-1", "1e3", "00012", "315360000001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		d, ok := ParseSpoolAge(v)
		if !ok {
			return
		}
		if d < 0 || d > MaxSpoolAge || d%time.Millisecond != 0 {
			t.Fatalf("ParseSpoolAge(%q) = %v", v, d)
		}
		if back, ok := ParseSpoolAge(FormatSpoolAge(d)); !ok || back != d {
			t.Fatalf("round trip of %v: %v %v", d, back, ok)
		}
	})
}
