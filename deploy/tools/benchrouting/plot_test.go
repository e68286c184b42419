package benchrouting

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// svgNode is any element of a parsed SVG.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []svgNode  `xml:",any"`
	Text    string     `xml:",chardata"`
}

func (n *svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

func (n *svgNode) hasClass(c string) bool {
	return strings.Contains(" "+n.attr("class")+" ", " "+c+" ")
}

// find returns every element under n (n included) with class c, in document order.
func (n *svgNode) find(c string) []*svgNode {
	var out []*svgNode
	if n.hasClass(c) {
		out = append(out, n)
	}
	for i := range n.Nodes {
		out = append(out, n.Nodes[i].find(c)...)
	}
	return out
}

// texts returns the text of every element under n.
func (n *svgNode) texts() []string {
	out := []string{n.Text}
	for i := range n.Nodes {
		out = append(out, n.Nodes[i].texts()...)
	}
	return out
}

// parseSVG parses s strictly: a document that is not well-formed fails the test.
func parseSVG(t *testing.T, s string) *svgNode {
	t.Helper()
	var root svgNode
	if err := xml.Unmarshal([]byte(s), &root); err != nil {
		t.Fatalf("not well-formed: %v\n%s", err, s)
	}
	if root.XMLName.Local != "svg" || root.XMLName.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("root %v, want svg in the SVG namespace", root.XMLName)
	}
	return &root
}

// width is the p90 bar's width in row g (-1 when it has none).
func barWidth(t *testing.T, g *svgNode) float64 {
	t.Helper()
	bars := g.find("p90")
	if len(bars) == 0 {
		return -1
	}
	if len(bars) > 1 {
		t.Fatalf("row %q: %d p90 bars", g.attr("data-policy"), len(bars))
	}
	w, err := strconv.ParseFloat(bars[0].attr("width"), 64)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// fullRun is a hand-made result set shaped like a full run: four workloads, every policy,
// and workload d's baseline.
func fullRun() []Result {
	var rs []Result
	for wi, w := range []string{"a", "b", "c", "d"} {
		for pi, p := range Policies {
			r := Result{Workload: w, Policy: p.Name, Requests: 100, OK: 100,
				TTFTp50: 20 + float64(10*pi), TTFTp90: float64(40*(pi+1)) * float64(wi+1) * 10}
			if w == "d" {
				r.QuietTTFTp90 = 100 + float64(300*pi)
				r.Throttled = pi
			}
			rs = append(rs, r)
		}
	}
	return append(rs, Result{Workload: "d0", Policy: "scored (default)", Requests: 30, OK: 30, TTFTp50: 130, TTFTp90: 139, QuietTTFTp90: 139})
}

func TestPlotSVG(t *testing.T) {
	tests := []struct {
		name    string
		results []Result
		check   func(t *testing.T, svg string, root *svgNode)
	}{{
		name:    "a bar per policy per workload, the default highlighted, d's quiet tenant and baseline",
		results: fullRun(),
		check: func(t *testing.T, svg string, root *svgNode) {
			panels := root.find("panel")
			if len(panels) != 4 {
				t.Fatalf("%d panels, want 4 (d0 is d's baseline, not a panel)", len(panels))
			}
			for i, p := range panels {
				w := []string{"a", "b", "c", "d"}[i]
				if p.attr("data-workload") != w {
					t.Fatalf("panel %d is %q, want %q", i, p.attr("data-workload"), w)
				}
				if !strings.Contains(strings.Join(p.texts(), "\n"), workloadTitles()[w]) {
					t.Errorf("panel %s: no title %q", w, workloadTitles()[w])
				}
				rows := p.find("row")
				if len(rows) != len(Policies) {
					t.Fatalf("panel %s: %d rows, want %d", w, len(rows), len(Policies))
				}
				for j, g := range rows {
					if g.attr("data-policy") != Policies[j].Name {
						t.Errorf("panel %s row %d: %q, want %q", w, j, g.attr("data-policy"), Policies[j].Name)
					}
					if barWidth(t, g) <= 0 {
						t.Errorf("panel %s row %q: no p90 bar", w, g.attr("data-policy"))
					}
					if len(g.find("p50")) != 1 {
						t.Errorf("panel %s row %q: no p50 mark", w, g.attr("data-policy"))
					}
					if def := g.hasClass("default"); def != (Policies[j].Name == "scored (default)") {
						t.Errorf("panel %s row %q: default highlight %v", w, g.attr("data-policy"), def)
					}
					if q := len(g.find("quiet")); q != map[bool]int{true: 1}[w == "d"] {
						t.Errorf("panel %s row %q: %d quiet-tenant bars", w, g.attr("data-policy"), q)
					}
				}
				if b := len(p.find("baseline")); b != map[bool]int{true: 1}[w == "d"] {
					t.Errorf("panel %s: %d baseline lines", w, b)
				}
			}
			if !strings.Contains(svg, "without the burst: 139 ms") {
				t.Error("the baseline's figure is not written")
			}
			if !strings.Contains(svg, "3 × 429") {
				t.Error("throttled requests are not written")
			}
		},
	}, {
		name: "a longer p90 gives a longer bar, on a log scale",
		results: []Result{
			{Workload: "a", Policy: "one", TTFTp50: 20, TTFTp90: 30},
			{Workload: "a", Policy: "two", TTFTp50: 20, TTFTp90: 300},
			{Workload: "a", Policy: "three", TTFTp50: 20, TTFTp90: 3000},
			{Workload: "a", Policy: "four", TTFTp50: 20, TTFTp90: 50000},
		},
		check: func(t *testing.T, _ string, root *svgNode) {
			rows := root.find("row")
			if len(rows) != 4 {
				t.Fatalf("%d rows, want 4", len(rows))
			}
			var w []float64
			for _, g := range rows {
				w = append(w, barWidth(t, g))
			}
			for i := 1; i < len(w); i++ {
				if w[i] <= w[i-1] {
					t.Fatalf("bar widths %v: not increasing with p90", w)
				}
			}
			// Each step is ten times the last: equal steps on a log scale.
			if d1, d2 := w[1]-w[0], w[2]-w[1]; d1 < 0.99*d2 || d1 > 1.01*d2 {
				t.Errorf("widths %v: steps %.1f and %.1f for ×10 each, want equal", w, d1, d2)
			}
		},
	}, {
		name: "odd characters in names are escaped",
		results: []Result{
			{Workload: `x&y<z>"q"`, Policy: `<script>alert('&')</script>`, TTFTp50: 25, TTFTp90: 60},
			{Workload: `x&y<z>"q"`, Policy: "ok \x01 control", TTFTp50: 25, TTFTp90: 60},
		},
		check: func(t *testing.T, svg string, root *svgNode) {
			if strings.Contains(svg, "<script") || strings.Contains(svg, "<z>") {
				t.Fatal("markup in a name reached the SVG unescaped")
			}
			rows := root.find("row")
			if len(rows) != 2 || rows[0].attr("data-policy") != `<script>alert('&')</script>` {
				t.Fatalf("policy name did not survive escaping: %+v", rows)
			}
			all := strings.Join(root.texts(), "\n")
			for _, s := range []string{`<script>alert('&')</script>`, `x&y<z>"q"`} {
				if !strings.Contains(all, s) {
					t.Errorf("text %q missing after parsing", s)
				}
			}
		},
	}, {
		name:    "a policy without answers has a row but no bar",
		results: []Result{{Workload: "b", Policy: "scored (default)", Requests: 10, Errors: 10}},
		check: func(t *testing.T, svg string, root *svgNode) {
			rows := root.find("row")
			if len(rows) != 1 || barWidth(t, rows[0]) != -1 || len(rows[0].find("p50")) != 0 {
				t.Fatalf("rows %+v, want one without a bar or mark", rows)
			}
			if !strings.Contains(svg, "no answers") || !strings.Contains(svg, "10 errors") {
				t.Error("the row does not say why it has no bar")
			}
		},
	}, {
		name:    "no results",
		results: nil,
		check: func(t *testing.T, _ string, root *svgNode) {
			if n := len(root.find("panel")); n != 0 {
				t.Fatalf("%d panels", n)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svg := plotSVG(tc.results)
			tc.check(t, svg, parseSVG(t, svg))
		})
	}
}

// --from renders routing.md and routing.svg from a routing.json and runs nothing.
func TestFromRendersWithoutRunning(t *testing.T) {
	dir := t.TempDir()
	js, err := json.Marshal(fullRun())
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in.json")
	if err := os.WriteFile(in, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if err := run([]string{"--from", in, "--out", out}); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(out, "routing.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(md), "\n| "); n != len(fullRun())+1 {
		t.Errorf("routing.md has %d table lines, want %d:\n%s", n, len(fullRun())+1, md)
	}
	svg, err := os.ReadFile(filepath.Join(out, "routing.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if rows := parseSVG(t, string(svg)).find("row"); len(rows) != 4*len(Policies) {
		t.Errorf("routing.svg has %d rows, want %d", len(rows), 4*len(Policies))
	}
	if _, err := os.Stat(filepath.Join(out, "routing.json")); !os.IsNotExist(err) {
		t.Errorf("--from wrote routing.json (%v)", err)
	}
	if err := run([]string{"--from", filepath.Join(dir, "missing.json"), "--out", out}); err == nil {
		t.Error("a missing --from file is not an error")
	}
}
