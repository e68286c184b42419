package benchrun

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"sort"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// series is one line of the plot: latency (ms) against requested rate.
type series struct {
	target string
	pts    []point
}

type point struct {
	rate, p50, p99 float64
	held           bool // drawn filled when the rate was sustained, hollow when not
}

var targetColors = map[string]color.RGBA{
	Direct:    {0x33, 0x66, 0xcc, 0xff},
	Bare:      {0x22, 0x99, 0x44, 0xff},
	Dataplane: {0xd6, 0x3a, 0x2f, 0xff},
}

// seriesFor gathers, per target, every attack with body (fixed rates and the max-rate
// search), one point per rate.
func (r *Report) seriesFor(body string) []series {
	var out []series
	for _, t := range []string{Direct, Bare, Dataplane} {
		byRate := map[int]point{}
		pt := func(f FixedResult) point { return point{float64(f.Rate), f.P50, f.P99, f.Sustained()} }
		for _, m := range r.MaxRates {
			if m.Target == t && m.Body == body {
				for _, s := range m.Steps {
					byRate[s.Rate] = pt(s)
				}
			}
		}
		for _, f := range r.Fixed {
			if f.Target == t && f.Body == body {
				byRate[f.Rate] = pt(f)
			}
		}
		s := series{target: t}
		for _, p := range byRate {
			s.pts = append(s.pts, p)
		}
		sort.Slice(s.pts, func(i, j int) bool { return s.pts[i].rate < s.pts[j].rate })
		if len(s.pts) > 0 {
			out = append(out, s)
		}
	}
	return out
}

// Plot draws latency (p50 solid, p99 dashed; log scale) against the requested rate for the
// three targets, one panel per request body, as a PNG.
func (r *Report) Plot(w io.Writer) error {
	bodies := []string{}
	seen := map[string]bool{}
	for _, f := range r.Fixed {
		if !seen[f.Body] {
			seen[f.Body] = true
			bodies = append(bodies, f.Body)
		}
	}
	if len(bodies) == 0 {
		bodies = []string{"1KiB"}
	}
	const panelW, panelH = 560, 420
	img := image.NewRGBA(image.Rect(0, 0, panelW*len(bodies), panelH+40))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	for i, b := range bodies {
		drawPanel(img, image.Rect(i*panelW, 0, (i+1)*panelW, panelH), "Non-streaming chat, "+b+" body ("+r.Mode+" run)", r.seriesFor(b))
	}
	// Legend.
	x := 70
	y := panelH + 22
	for _, t := range []string{Direct, Bare, Dataplane} {
		c := targetColors[t]
		line(img, x, y-4, x+30, y-4, c, false)
		text(img, x+36, y, t, color.Black)
		x += 150
	}
	line(img, x, y-4, x+30, y-4, color.RGBA{0x55, 0x55, 0x55, 0xff}, false)
	text(img, x+36, y, "p50", color.Black)
	x += 90
	line(img, x, y-4, x+30, y-4, color.RGBA{0x55, 0x55, 0x55, 0xff}, true)
	text(img, x+36, y, "p99", color.Black)
	x += 90
	dot(img, x+4, y-4, color.RGBA{0x55, 0x55, 0x55, 0xff}, false)
	text(img, x+14, y, "rate not sustained", color.Black)
	return png.Encode(w, img)
}

func drawPanel(img *image.RGBA, r image.Rectangle, title string, ss []series) {
	left, right, top, bottom := r.Min.X+70, r.Max.X-20, r.Min.Y+40, r.Max.Y-50
	text(img, r.Min.X+70, r.Min.Y+20, title, color.Black)
	maxRate, lo, hi := 1000.0, math.Inf(1), 0.0
	for _, s := range ss {
		for _, p := range s.pts {
			maxRate = math.Max(maxRate, p.rate)
			lo, hi = math.Min(lo, p.p50), math.Max(hi, p.p99)
		}
	}
	if hi == 0 {
		lo, hi = 0.1, 10
	}
	// Log y from a power-of-ten-ish floor to ceiling.
	ylo := math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.01))))
	yhi := math.Pow(10, math.Ceil(math.Log10(math.Max(hi, ylo*10))))
	xmax := niceCeil(maxRate * 1.08)
	px := func(rate float64) int { return left + int(rate/xmax*float64(right-left)) }
	py := func(ms float64) int {
		ms = math.Max(ms, ylo)
		f := (math.Log10(ms) - math.Log10(ylo)) / (math.Log10(yhi) - math.Log10(ylo))
		return bottom - int(f*float64(bottom-top))
	}
	grid := color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
	axis := color.RGBA{0x33, 0x33, 0x33, 0xff}
	// Y grid and labels at 1, 2, 5 × 10^k.
	for d := ylo; d <= yhi*1.0001; d *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := d * m
			if v > yhi*1.0001 {
				break
			}
			y := py(v)
			line(img, left, y, right, y, grid, false)
			text(img, left-8-7*len(fmtMS(v)), y+4, fmtMS(v), axis)
		}
	}
	// X grid and labels.
	step := niceStep(xmax / 6)
	for v := 0.0; v <= xmax+1; v += step {
		x := px(v)
		line(img, x, top, x, bottom, grid, false)
		l := fmt.Sprintf("%.0f", v)
		text(img, x-7*len(l)/2, bottom+16, l, axis)
	}
	line(img, left, bottom, right, bottom, axis, false)
	line(img, left, top, left, bottom, axis, false)
	text(img, (left+right)/2-70, bottom+36, "requested rate (req/s)", axis)
	text(img, r.Min.X+4, top-6, "ms (log)", axis)
	for _, s := range ss {
		c := targetColors[s.target]
		for k, p := range s.pts {
			x, y50, y99 := px(p.rate), py(p.p50), py(p.p99)
			dot(img, x, y50, c, p.held)
			dot(img, x, y99, c, p.held)
			if k > 0 {
				q := s.pts[k-1]
				line(img, px(q.rate), py(q.p50), x, y50, c, false)
				line(img, px(q.rate), py(q.p99), x, y99, c, true)
			}
		}
	}
}

func fmtMS(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%g", math.Round(v*1000)/1000)
	}
	return fmt.Sprintf("%.0f", v)
}

// niceStep rounds v up to 1, 2 or 5 × 10^k.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// niceCeil rounds v up to a round number (1, 1.2, 1.5, 2, ... × 10^k).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: image.NewUniform(c), Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// dot draws a point: a filled disc, or a ring when not filled.
func dot(img *image.RGBA, x, y int, c color.RGBA, filled bool) {
	for dx := -4; dx <= 4; dx++ {
		for dy := -4; dy <= 4; dy++ {
			d := dx*dx + dy*dy
			if filled && d <= 6 || !filled && d >= 9 && d <= 16 {
				img.SetRGBA(x+dx, y+dy, c)
			}
		}
	}
}

// line draws a 2-pixel line from (x0,y0) to (x1,y1), dashed (8 on, 6 off) if asked.
func line(img *image.RGBA, x0, y0, x1, y1 int, c color.Color, dashed bool) {
	dx, dy := x1-x0, y1-y0
	n := max(abs(dx), abs(dy))
	if n == 0 {
		img.Set(x0, y0, c)
		return
	}
	length := math.Hypot(float64(dx), float64(dy))
	for i := 0; i <= n; i++ {
		if dashed && int(float64(i)/float64(n)*length)%14 >= 8 {
			continue
		}
		x := x0 + int(math.Round(float64(dx*i)/float64(n)))
		y := y0 + int(math.Round(float64(dy*i)/float64(n)))
		img.Set(x, y, c)
		img.Set(x, y+1, c)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
