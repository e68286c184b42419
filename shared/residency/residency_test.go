package residency

import "testing"

func TestSatisfies(t *testing.T) {
	tests := []struct {
		policy, country string
		want            bool
	}{
		{SE, "SE", true}, {SE, "FI", false}, {SE, "US", false},
		{EU, "SE", true}, {EU, "DE", true}, {EU, "NO", false}, {EU, "US", false},
		{Any, "US", true}, {Any, "SE", true},
		{"mars", "SE", false}, {SE, "se", false},
	}
	for _, tt := range tests {
		if got := Satisfies(tt.policy, tt.country); got != tt.want {
			t.Errorf("Satisfies(%q,%q)=%v want %v", tt.policy, tt.country, got, tt.want)
		}
	}
}
