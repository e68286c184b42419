package internalapi

import (
	"maps"
	"strings"
	"testing"
)

func TestBreakers(t *testing.T) {
	tests := []struct {
		name   string
		states map[string]string
		want   string
	}{
		{"none", nil, ""},
		{"closed left out", map[string]string{"a": "closed", "b": "open"}, "b=open"},
		{"sorted and escaped", map[string]string{"z=1": "half-open", "chat-se": "open"}, "chat-se=open&z%3D1=half-open"},
		{"unknown state left out", map[string]string{"a": "broken"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := FormatBreakers(tt.states)
			if got != tt.want {
				t.Fatalf("FormatBreakers = %q, want %q", got, tt.want)
			}
			back, ok := ParseBreakers(got)
			if !ok {
				t.Fatalf("ParseBreakers(%q) refused", got)
			}
			want := map[string]string{}
			for r, st := range tt.states {
				if st == BreakerOpen || st == BreakerHalfOpen {
					want[r] = st
				}
			}
			if !maps.Equal(back, want) {
				t.Fatalf("round trip %v, want %v", back, want)
			}
		})
	}
	for _, bad := range []string{"a=closed", "a=open&a=open", "a", "%zz=open", "=open", "a=open&b=" + strings.Repeat("x", MaxBreakersBytes)} {
		if _, ok := ParseBreakers(bad); ok {
			t.Errorf("ParseBreakers(%.40q) accepted", bad)
		}
	}
	many := map[string]string{}
	for i := 0; i < MaxBreakers+10; i++ {
		many[strings.Repeat("r", 1+i%5)+string(rune('a'+i%26))+strings.Repeat("x", i/26)] = BreakerOpen
	}
	if got, ok := ParseBreakers(FormatBreakers(many)); !ok || len(got) > MaxBreakers {
		t.Fatalf("a report of %d routes: %d, %v", len(many), len(got), ok)
	}
}

func FuzzParseBreakers(f *testing.F) {
	f.Add("chat-se=open&embed=half-open")
	f.Add("")
	f.Add("a=open&a=half-open")
	f.Fuzz(func(t *testing.T, s string) {
		m, ok := ParseBreakers(s)
		if !ok {
			return
		}
		if len(m) > MaxBreakers {
			t.Fatalf("%d routes", len(m))
		}
		again, ok := ParseBreakers(FormatBreakers(m))
		if !ok || !maps.Equal(again, m) {
			t.Fatalf("round trip of %v: %v %v", m, again, ok)
		}
	})
}
