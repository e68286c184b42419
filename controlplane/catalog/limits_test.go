package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sekgate/gateway/shared/snapshot"
)

func TestParseLimitsYAML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want snapshot.Limits
		bad  bool
	}{
		{"all", "requests_per_second: 2.5\nburst: 5\nmax_concurrent: 3\n", snapshot.Limits{RequestsPerSecond: 2.5, Burst: 5, MaxConcurrent: 3}, false},
		{"empty is unlimited", "", snapshot.Limits{}, false},
		{"partial", "max_concurrent: 4\n", snapshot.Limits{MaxConcurrent: 4}, false},
		{"negative", "burst: -1\n", snapshot.Limits{}, true},
		{"unknown field", "rps: 3\n", snapshot.Limits{}, true},
		{"wrong type", "burst: many\n", snapshot.Limits{}, true},
		{"not a map", "- 1\n", snapshot.Limits{}, true},
		{"infinite", "requests_per_second: .inf\n", snapshot.Limits{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseLimitsYAML([]byte(tt.in))
			if (err != nil) != tt.bad {
				t.Fatalf("err %v, want error %v", err, tt.bad)
			}
			if !tt.bad && got != tt.want {
				t.Fatalf("got %+v want %+v", got, tt.want)
			}
		})
	}
}

// The shipped defaults file parses and limits something.
func TestDefaultLimitsFile(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "configs", "limits.default.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseLimitsYAML(b)
	if err != nil {
		t.Fatal(err)
	}
	if l.RequestsPerSecond <= 0 || l.Burst <= 0 || l.MaxConcurrent <= 0 {
		t.Fatalf("defaults %+v", l)
	}
}

func FuzzParseLimitsYAML(f *testing.F) {
	f.Add("requests_per_second: 1\nburst: 2\n")
	f.Add("{")
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLimitsYAML([]byte(s))
		if err == nil && (l.RequestsPerSecond < 0 || l.Burst < 0 || l.MaxConcurrent < 0) {
			t.Fatalf("accepted %+v", l)
		}
	})
}
