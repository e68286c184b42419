package benchingest

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var out []time.Duration
		for _, v := range n {
			out = append(out, time.Duration(v)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		in   []time.Duration
		p    float64
		want float64
	}{
		{nil, 50, 0},
		{ms(7), 99, 7},
		{ms(1, 2, 3, 4), 50, 2},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10},
		{ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 50, 5},
	} {
		if got := percentile(tc.in, tc.p); got != tc.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", tc.in, tc.p, got, tc.want)
		}
	}
}

// The table has a row per scenario and names the best; the plot is well-formed SVG with
// a line per node count in each panel.
func TestReportTableAndPlot(t *testing.T) {
	r := &Report{Mode: "short", Cores: 2, Accounts: 5, Duration: 4, Command: "make bench-ingest-short"}
	for _, n := range []int{1, 4} {
		for _, b := range []int{10, 100, 1000} {
			r.Results = append(r.Results, Result{Nodes: n, BatchSize: b, Records: int64(100 * b), RecordsPerSec: float64(n * b * 10),
				CPPer1000: 0.01, PGPer1000: 0.02, Growth: map[string]float64{"records_heap": 400}, LoadAfter: "1.00 1.00 1.00"})
		}
	}
	md := r.Markdown()
	if got := strings.Count(md, "\n| "); got != 1+len(r.Results) {
		t.Errorf("table has %d rows, want header and %d:\n%s", got, len(r.Results), md)
	}
	if !strings.Contains(md, "Best: 40000 records/s (4 nodes, batches of 1000) at 0.0300 CPU-s") {
		t.Errorf("best scenario not named:\n%s", md)
	}
	svg := r.SVG()
	dec := xml.NewDecoder(strings.NewReader(svg))
	lines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("plot is not well-formed XML: %v\n%s", err, svg)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			lines++
		}
	}
	if lines != 4 {
		t.Errorf("%d lines plotted, want 2 node counts × 2 panels", lines)
	}
}
