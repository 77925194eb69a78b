// Package svgchart draws the few charts the load tool publishes, as plain
// SVG written by hand: line panels (a value against concurrency, one line per
// peer) and bar panels (one bar per peer). No plotting dependency, and the
// output is deterministic text that diffs well.
package svgchart

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
)

// Series is one peer's values. Y[i] belongs to the panel's X[i] (line
// panels) or is the panel's only value (bar panels, Y[0]). NaN is a gap.
type Series struct {
	Name string
	Y    []float64
	// Highlight draws the series thicker (sluice's own lines).
	Highlight bool
}

// Panel is one chart of a figure.
type Panel struct {
	Title  string
	XLabel string
	YLabel string
	// X are the x positions of a line panel, drawn on a log2 scale and
	// labelled with their values. Empty for a bar panel.
	X      []float64
	Series []Series
	// Format formats a value for axis ticks and bar labels. Default %g.
	Format func(float64) string
}

// palette is colour-blind friendly (Okabe–Ito), sluice first.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#999999", "#000000", "#F0E442"}

const (
	panelW  = 420
	panelH  = 300
	marginL = 70
	marginR = 20
	marginT = 40
	marginB = 50
)

// Figure renders panels side by side with one legend underneath. Series are
// matched across panels by name for their colour.
func Figure(title string, panels []Panel) []byte {
	names := legendNames(panels)
	legendRows := (len(names) + 3) / 4
	w := len(panels) * panelW
	h := 30 + panelH + 20 + legendRows*20 + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="20" text-anchor="middle" font-size="15" font-weight="bold">%s</text>`+"\n", w/2, esc(title))
	color := map[string]string{}
	for i, n := range names {
		color[n] = palette[i%len(palette)]
	}
	for i, p := range panels {
		fmt.Fprintf(&b, `<g transform="translate(%d,30)">`+"\n", i*panelW)
		if len(p.X) > 0 {
			linePanel(&b, p, color)
		} else {
			barPanel(&b, p, color)
		}
		b.WriteString("</g>\n")
	}
	y0 := 30 + panelH + 10
	for i, n := range names {
		x := 20 + (i%4)*(w-40)/4
		y := y0 + (i/4)*20
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			x, y, color[n], x+20, y+10, esc(n))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

func legendNames(panels []Panel) []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range panels {
		for _, s := range p.Series {
			if !seen[s.Name] {
				seen[s.Name] = true
				names = append(names, s.Name)
			}
		}
	}
	return names
}

func (p Panel) format(v float64) string {
	if p.Format != nil {
		return p.Format(v)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func frame(b *strings.Builder, p Panel) (x0, y0, x1, y1 float64) {
	x0, y0 = marginL, marginT
	if len(p.X) == 0 {
		x0 = marginL + 30 // bar panels name their bars on the left
	}
	x1, y1 = panelW-marginR, panelH-marginB
	fmt.Fprintf(b, `<text x="%g" y="%d" text-anchor="middle" font-size="13" font-weight="bold">%s</text>`+"\n", (x0+x1)/2, 20, esc(p.Title))
	fmt.Fprintf(b, `<rect x="%g" y="%g" width="%g" height="%g" fill="none" stroke="#444"/>`+"\n", x0, y0, x1-x0, y1-y0)
	fmt.Fprintf(b, `<text x="%g" y="%g" text-anchor="middle">%s</text>`+"\n", (x0+x1)/2, y1+38, esc(p.XLabel))
	fmt.Fprintf(b, `<text x="14" y="%g" text-anchor="middle" transform="rotate(-90 14 %g)">%s</text>`+"\n", (y0+y1)/2, (y0+y1)/2, esc(p.YLabel))
	return
}

func maxY(p Panel) float64 {
	m := 0.0
	for _, s := range p.Series {
		for _, v := range s.Y {
			if !math.IsNaN(v) && v > m {
				m = v
			}
		}
	}
	return m
}

// NiceTicks returns about n round tick values from 0 to at least hi.
func NiceTicks(hi float64, n int) []float64 {
	if hi <= 0 || math.IsNaN(hi) || math.IsInf(hi, 0) {
		return []float64{0, 1}
	}
	raw := hi / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var ticks []float64
	for v := 0.0; ; v += step {
		ticks = append(ticks, v)
		if v >= hi {
			break
		}
	}
	return ticks
}

func linePanel(b *strings.Builder, p Panel, color map[string]string) {
	x0, y0, x1, y1 := frame(b, p)
	ticks := NiceTicks(maxY(p), 5)
	top := ticks[len(ticks)-1]
	ly := func(v float64) float64 { return y1 - (y1-y0)*v/top }
	lmin, lmax := math.Log2(p.X[0]), math.Log2(p.X[len(p.X)-1])
	lx := func(v float64) float64 {
		if lmax == lmin {
			return (x0 + x1) / 2
		}
		pad := (x1 - x0) * 0.06
		return x0 + pad + (x1-x0-2*pad)*(math.Log2(v)-lmin)/(lmax-lmin)
	}
	for _, t := range ticks {
		y := ly(t)
		fmt.Fprintf(b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%s</text>`+"\n",
			x0, y, x1, y, x0-5, y+4, esc(p.format(t)))
	}
	for _, x := range p.X {
		fmt.Fprintf(b, `<text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n", lx(x), y1+16, strconv.FormatFloat(x, 'g', -1, 64))
	}
	for _, s := range p.Series {
		c := color[s.Name]
		width := 1.5
		if s.Highlight {
			width = 3.5
		}
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				fmt.Fprintf(b, `<polyline fill="none" stroke="%s" stroke-width="%g" points="%s"/>`+"\n", c, width, strings.Join(pts, " "))
			}
			pts = pts[:0]
		}
		for i, v := range s.Y {
			if i >= len(p.X) || math.IsNaN(v) {
				flush()
				continue
			}
			x, y := lx(p.X[i]), ly(v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%g" fill="%s"><title>%s: %s</title></circle>`+"\n", x, y, width+1, c, esc(s.Name), esc(p.format(v)))
		}
		flush()
	}
}

func barPanel(b *strings.Builder, p Panel, color map[string]string) {
	x0, y0, x1, y1 := frame(b, p)
	ticks := NiceTicks(maxY(p)*1.15, 4) // room for the value labels
	top := ticks[len(ticks)-1]
	lx := func(v float64) float64 { return x0 + (x1-x0)*v/top }
	for _, t := range ticks {
		x := lx(t)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/><text x="%.1f" y="%g" text-anchor="middle">%s</text>`+"\n",
			x, y0, x, y1, x, y1+16, esc(p.format(t)))
	}
	n := len(p.Series)
	if n == 0 {
		return
	}
	slot := (y1 - y0) / float64(n)
	for i, s := range p.Series {
		y := y0 + slot*float64(i) + slot*0.15
		fmt.Fprintf(b, `<text x="%g" y="%.1f" text-anchor="end" font-size="11">%s</text>`+"\n", x0-4, y+slot*0.35+4, esc(s.Name))
		if len(s.Y) == 0 || math.IsNaN(s.Y[0]) {
			continue
		}
		v := s.Y[0]
		stroke := ""
		if s.Highlight {
			stroke = ` stroke="#000" stroke-width="1.5"`
		}
		fmt.Fprintf(b, `<rect x="%g" y="%.1f" width="%.1f" height="%.1f" fill="%s"%s><title>%s: %s</title></rect>`+"\n",
			x0, y, lx(v)-x0, slot*0.7, color[s.Name], stroke, esc(s.Name), esc(p.format(v)))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx(v)+4, y+slot*0.35+4, esc(p.format(v)))
	}
}

func esc(s string) string { return html.EscapeString(s) }
