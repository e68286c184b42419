package benchrouting

import (
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Plot geometry, in SVG user units (pixels at 100 %).
const (
	plotWidth   = 900
	plotLabelX  = 196 // policy labels end here (right-aligned)
	plotX0      = 204 // the x axis starts here ...
	plotX1      = 730 // ... and ends here; the rest is room for the figures
	plotRow     = 22  // a row of one bar
	plotRowD    = 32  // a row with the quiet tenant's bar under it
	plotBar     = 14
	plotQuiet   = 7
	plotFont    = `font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"`
	colorBar    = "#9fb3c8"
	colorDef    = "#e07b00"
	colorDefBg  = "#fff3e0"
	colorMark   = "#102a43"
	colorQuiet  = "#2f855a"
	colorGrid   = "#d9e2ec"
	colorMinor  = "#f0f4f8"
	colorText   = "#243b53"
	colorMuted  = "#627d98"
	defaultName = "scored (default)"
)

// plotPanel is one workload's results and, when it has one, its baseline's.
type plotPanel struct {
	name, title string
	rows        []Result
	baseline    *Result // the same workload without the burst (quiet tenant's reference)
}

// workloadTitles maps every workload's and baseline's name to its title.
func workloadTitles() map[string]string {
	titles := map[string]string{}
	for _, w := range Workloads() {
		titles[w.Name] = w.Title
		if w.Baseline != nil {
			titles[w.Baseline.Name] = w.Baseline.Title
		}
	}
	return titles
}

// panels groups results by workload in the order they first appear; a baseline's result
// goes with its workload instead of a panel of its own.
func panels(results []Result) []*plotPanel {
	titles := workloadTitles()
	baselineOf := map[string]string{} // baseline name -> workload name
	for _, w := range Workloads() {
		if w.Baseline != nil {
			baselineOf[w.Baseline.Name] = w.Name
		}
	}
	var out []*plotPanel
	find := func(name string) *plotPanel {
		for _, p := range out {
			if p.name == name {
				return p
			}
		}
		title := titles[name]
		if title == "" {
			title = name
		}
		p := &plotPanel{name: name, title: title}
		out = append(out, p)
		return p
	}
	for _, r := range results {
		if parent, ok := baselineOf[r.Workload]; ok {
			find(parent).baseline = &r
			continue
		}
		p := find(r.Workload)
		p.rows = append(p.rows, r)
	}
	return out
}

// logScale maps milliseconds to x on a log axis from lo to hi (powers of ten).
type logScale struct{ lo, hi float64 }

func newLogScale(ps []*plotPanel) logScale {
	lo, hi := math.Inf(1), 0.0
	see := func(v float64) {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	for _, p := range ps {
		for _, r := range p.rows {
			see(r.TTFTp50)
			see(r.TTFTp90)
			see(r.QuietTTFTp90)
		}
		if p.baseline != nil {
			see(p.baseline.QuietTTFTp90)
		}
	}
	if hi == 0 {
		return logScale{10, 1000}
	}
	s := logScale{math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))}
	if s.hi <= s.lo {
		s.hi = s.lo * 10
	}
	return s
}

func (s logScale) x(v float64) float64 {
	v = min(max(v, s.lo), s.hi)
	return plotX0 + (plotX1-plotX0)*math.Log10(v/s.lo)/math.Log10(s.hi/s.lo)
}

// plotSVG renders results as a self-contained SVG: one panel per workload, a bar per
// policy from the axis to its TTFT p90 with a mark at its p50, on a shared log-scale axis
// in ms; the default policy highlighted; where the workload has a quiet tenant, a thinner
// bar for its TTFT p90 and a dashed line at its p90 without the burst.
func plotSVG(results []Result) string {
	ps := panels(results)
	sc := newLogScale(ps)
	height := 78
	for _, p := range ps {
		height += panelHeight(p)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12" fill="%s">`+"\n",
		plotWidth, height, plotWidth, height, plotFont, colorText)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", plotWidth, height)
	b.WriteString(`<text x="16" y="26" font-size="16" font-weight="bold">Time to first token by routing policy (make bench-routing)</text>` + "\n")
	legend(&b)
	y := 78
	for _, p := range ps {
		panel(&b, p, sc, y)
		y += panelHeight(p)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func hasQuiet(p *plotPanel) bool {
	return p.baseline != nil || slices.ContainsFunc(p.rows, func(r Result) bool { return r.QuietTTFTp90 > 0 })
}

func panelHeight(p *plotPanel) int {
	row := plotRow
	if hasQuiet(p) {
		row = plotRowD
	}
	h := 26 + row*len(p.rows) + 30
	if p.baseline != nil {
		h += 14
	}
	return h
}

func legend(b *strings.Builder) {
	y := 44
	fmt.Fprintf(b, `<g class="legend" font-size="11" fill="%s">`+"\n", colorMuted)
	fmt.Fprintf(b, `<rect x="16" y="%d" width="26" height="10" fill="%s"/><text x="48" y="%d">TTFT p90</text>`+"\n", y, colorBar, y+9)
	fmt.Fprintf(b, `<line x1="120" y1="%d" x2="120" y2="%d" stroke="%s" stroke-width="2"/><text x="127" y="%d">TTFT p50</text>`+"\n", y-2, y+12, colorMark, y+9)
	fmt.Fprintf(b, `<rect x="196" y="%d" width="26" height="10" fill="%s"/><text x="228" y="%d">the default policy</text>`+"\n", y, colorDef, y+9)
	fmt.Fprintf(b, `<rect x="346" y="%d" width="26" height="6" fill="%s"/><text x="378" y="%d">quiet tenant's TTFT p90</text>`+"\n", y+2, colorQuiet, y+9)
	fmt.Fprintf(b, `<line x1="522" y1="%d" x2="548" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/><text x="554" y="%d">quiet tenant without the burst</text>`+"\n", y+5, y+5, colorQuiet, y+9)
	fmt.Fprintf(b, `<text x="16" y="%d">Times in ms, log scale; 429 and errors are requests without a time.</text>`+"\n", y+25)
	b.WriteString("</g>\n")
}

func panel(b *strings.Builder, p *plotPanel, sc logScale, y int) {
	quiet := hasQuiet(p)
	row := plotRow
	if quiet {
		row = plotRowD
	}
	top, bottom := y+26, y+26+row*len(p.rows)
	fmt.Fprintf(b, `<g class="panel" data-workload="%s">`+"\n", esc(p.name))
	fmt.Fprintf(b, `<text x="16" y="%d" font-size="13" font-weight="bold">%s</text>`+"\n", y+16, esc(p.title))
	for i, r := range p.rows {
		if r.Policy == defaultName {
			fmt.Fprintf(b, `<rect x="8" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", top+i*row, plotWidth-16, row, colorDefBg)
		}
	}
	grid(b, sc, top, bottom)
	for i, r := range p.rows {
		bar(b, p.name, r, sc, top+i*row, quiet)
	}
	if p.baseline != nil && p.baseline.QuietTTFTp90 > 0 {
		x := sc.x(p.baseline.QuietTTFTp90)
		fmt.Fprintf(b, `<line class="baseline" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"/>`+"\n",
			x, top-4, x, bottom+4, colorQuiet)
		anchor := "start"
		if x > plotWidth/2 {
			anchor = "end"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="11" fill="%s" text-anchor="%s">quiet tenant's TTFT p90 without the burst: %s ms</text>`+"\n",
			x, bottom+42, colorQuiet, anchor, num(p.baseline.QuietTTFTp90))
	}
	b.WriteString("</g>\n")
}

// grid draws the decade lines (labelled) and the 2× and 5× lines between them.
func grid(b *strings.Builder, sc logScale, top, bottom int) {
	for d := sc.lo; d <= sc.hi*1.0001; d *= 10 {
		for _, m := range []float64{2, 5} {
			if v := d * m; v < sc.hi {
				fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", sc.x(v), top, sc.x(v), bottom, colorMinor)
			}
		}
		x := sc.x(d)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, top, x, bottom, colorGrid)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="10" fill="%s" text-anchor="middle">%s</text>`+"\n", x, bottom+14, colorMuted, num(d))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s"/>`+"\n", plotX0, top, plotX0, bottom, colorMuted)
}

// bar draws one policy's row.
func bar(b *strings.Builder, workload string, r Result, sc logScale, y int, quiet bool) {
	def := r.Policy == defaultName
	class, fill, weight := "row", colorBar, "normal"
	if def {
		class, fill, weight = "row default", colorDef, "bold"
	}
	fmt.Fprintf(b, `<g class="%s" data-workload="%s" data-policy="%s">`+"\n", class, esc(workload), esc(r.Policy))
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" font-weight="%s">%s</text>`+"\n", plotLabelX, y+3+plotBar-3, weight, esc(r.Policy))
	label := "no answers"
	end := float64(plotX0)
	if r.TTFTp90 > 0 {
		end = sc.x(r.TTFTp90)
		fmt.Fprintf(b, `<rect class="p90" x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", plotX0, y+3, end-plotX0, plotBar, fill)
		label = "p50 " + num(r.TTFTp50) + " · p90 " + num(r.TTFTp90)
	}
	if r.TTFTp50 > 0 {
		x := sc.x(r.TTFTp50)
		fmt.Fprintf(b, `<line class="p50" x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", x, y+1, x, y+3+plotBar+2, colorMark)
	}
	if r.Throttled > 0 {
		label += fmt.Sprintf(" · %d × 429", r.Throttled)
	}
	if r.Errors > 0 {
		label += fmt.Sprintf(" · %d errors", r.Errors)
	}
	figure(b, label, end, y+3+plotBar-3, 11, colorText)
	if quiet && r.QuietTTFTp90 > 0 {
		qy := y + 3 + plotBar + 2
		qx := sc.x(r.QuietTTFTp90)
		fmt.Fprintf(b, `<rect class="quiet" x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", plotX0, qy, qx-plotX0, plotQuiet, colorQuiet)
		figure(b, "quiet p90 "+num(r.QuietTTFTp90), qx, qy+plotQuiet+1, 10, colorQuiet)
	}
	b.WriteString("</g>\n")
}

// figure writes text just right of x, or inside the bar ending at x when it would not fit.
func figure(b *strings.Builder, s string, x float64, y, size int, fill string) {
	width := float64(len([]rune(s))) * float64(size) * 0.58
	if x+6+width <= plotWidth-6 {
		fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="%d" fill="%s">%s</text>`+"\n", x+6, y, size, fill, esc(s))
		return
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%d" font-size="%d" fill="%s" text-anchor="end">%s</text>`+"\n", x-4, y, size, colorMark, esc(s))
}

// num formats milliseconds with thousands separators ("4,808"); below 10, one decimal.
func num(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f", v)
	}
	s := fmt.Sprintf("%.0f", v)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// esc escapes s for SVG text and attribute values.
func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
