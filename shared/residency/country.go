package residency

import "golang.org/x/text/language"

// ValidCountry reports whether c is what a node may state as its country: empty (no
// country) or an ISO 3166-1 alpha-2 code of a country, in upper case (SE, DE, US). Codes
// for groupings and private use (EU, ZZ, XX, AA, QM..QZ) are not countries.
func ValidCountry(c string) bool {
	if c == "" {
		return true
	}
	if len(c) != 2 || c[0] < 'A' || c[0] > 'Z' || c[1] < 'A' || c[1] > 'Z' {
		return false
	}
	r, err := language.ParseRegion(c)
	return err == nil && r.IsCountry()
}
