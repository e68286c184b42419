// Package residency defines account residency policies and which route locations satisfy them.
package residency

// Policy values, as the interface names them.
const (
	SE  = "se"  // Sweden only
	EU  = "eu"  // EU member states, Sweden included
	Any = "any" // anywhere
)

// Valid reports whether p is a known policy.
func Valid(p string) bool { return p == SE || p == EU || p == Any }

// euCountries lists ISO 3166-1 alpha-2 codes of EU member states.
var euCountries = map[string]bool{
	"AT": true, "BE": true, "BG": true, "HR": true, "CY": true, "CZ": true, "DK": true,
	"EE": true, "FI": true, "FR": true, "DE": true, "GR": true, "HU": true, "IE": true,
	"IT": true, "LV": true, "LT": true, "LU": true, "MT": true, "NL": true, "PL": true,
	"PT": true, "RO": true, "SK": true, "SI": true, "ES": true, "SE": true,
}

// InEU reports whether an ISO country code is an EU member state.
func InEU(country string) bool { return euCountries[country] }

// Satisfies reports whether a route located in country (ISO alpha-2, upper case) may serve
// an account with policy p. Unknown policies satisfy nothing.
func Satisfies(p, country string) bool {
	switch p {
	case SE:
		return country == "SE"
	case EU:
		return euCountries[country]
	case Any:
		return true
	}
	return false
}
