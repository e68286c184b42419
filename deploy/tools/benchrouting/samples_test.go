package benchrouting

import (
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A run's samples file has a row per request in arrival order, the warm-up's marked not
// counted and an unanswered request's times empty, under the node count's directory.
func TestWriteSamples(t *testing.T) {
	dir := t.TempDir()
	w := &Workload{Name: "c"}
	samples := []sample{
		{at: 1500 * time.Millisecond, warmup: true, tenant: 2, status: 200, replica: 1, ttft: 30 * time.Millisecond, e2e: 350 * time.Millisecond},
		{at: 4250 * time.Millisecond, tenant: 0, status: 429, replica: -1},
	}
	if err := writeSamples(dir, 3, w, Policy{Routing: "scored"}, samples); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "samples-3nodes", "c-scored.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{samplesHeader,
		{"1500.0", "2", "200", "1", "30.0", "350.0", "0"},
		{"4250.0", "0", "429", "-1", "", "", "1"},
	}
	if len(rows) != len(want) {
		t.Fatalf("rows %q", rows)
	}
	for i := range want {
		if !slices.Equal(rows[i], want[i]) {
			t.Errorf("row %d: %q, want %q", i, rows[i], want[i])
		}
	}
}
