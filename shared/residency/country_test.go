package residency

import "testing"

func TestValidCountry(t *testing.T) {
	for c, want := range map[string]bool{
		"": true, "SE": true, "DE": true, "US": true, "FI": true, "GB": true,
		"se": false, "Se": false, "SWE": false, "S": false, "752": false, "S\x00": false,
		"EU": false, "ZZ": false, "XX": false, "AA": false, "QO": false, " SE": false,
	} {
		if got := ValidCountry(c); got != want {
			t.Errorf("ValidCountry(%q) = %v, want %v", c, got, want)
		}
	}
}

// FuzzValidCountry: what ValidCountry admits is empty or two upper-case ASCII letters.
func FuzzValidCountry(f *testing.F) {
	for _, s := range []string{"", "SE", "se", "EU", "SWE", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, c string) {
		if !ValidCountry(c) {
			return
		}
		if c != "" && (len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z') {
			t.Fatalf("ValidCountry admitted %q", c)
		}
	})
}
