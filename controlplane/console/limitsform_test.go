package console

import (
	"net/url"
	"testing"
)

func TestLimitsForm(t *testing.T) {
	for _, tt := range []struct {
		name string
		form url.Values
		want string // the PATCH's limits value; "" for a refusal
	}{
		{"all fields", url.Values{"requests_per_second": {"2.5"}, "burst": {"5"}, "max_concurrent": {"3"}}, `{"requests_per_second":2.5,"burst":5,"max_concurrent":3}`},
		{"decimal comma, spaces", url.Values{"requests_per_second": {" 0,5 "}}, `{"requests_per_second":0.5}`},
		{"empty is unlimited", url.Values{"requests_per_second": {""}, "burst": {""}}, `{}`},
		{"hold", url.Values{"max_concurrent": {"2"}, "hold_max_price": {"1"}}, `{"max_concurrent":2,"hold_max_price":true}`},
		{"clear wins", url.Values{"clear": {"1"}, "burst": {"-1"}}, `null`},
		{"negative rate", url.Values{"requests_per_second": {"-1"}}, ""},
		{"not a number", url.Values{"requests_per_second": {"fast"}}, ""},
		{"NaN", url.Values{"requests_per_second": {"NaN"}}, ""},
		{"fractional burst", url.Values{"burst": {"1.5"}}, ""},
		{"negative concurrency", url.Values{"max_concurrent": {"-2"}}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := limitsForm(tt.form)
			if tt.want == "" {
				if err == nil {
					t.Fatalf("accepted as %s", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("limitsForm = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
