package main

import (
	"bufio"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// Sizes in pixels: a gridPos unit is 50 px wide (24 across) and 30 px high,
// as in Grafana.
const (
	unitW, unitH = 50, 30
	header       = 64 // the title and the phase strip
	pad          = 4  // between panels
	legendLine   = 14
)

var palette = []string{"#7EB26D", "#EAB839", "#6ED0E0", "#EF843C", "#E24D42", "#1F78C1", "#BA43A9", "#705DA0", "#508642", "#CCA300"}

// draw writes the dashboard as an SVG: a title, the phases on a time line,
// then every panel at its gridPos with its series over [start, end].
func draw(w io.Writer, d *dashboard, spans []span, start, end time.Time) error {
	rows := 0
	for _, p := range d.Panels {
		rows = max(rows, p.GridPos.Y+p.GridPos.H)
	}
	width, height := 24*unitW, header+rows*unitH
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#111217"/>`+"\n", width, height)
	fmt.Fprintf(b, `<text x="8" y="22" font-size="16" fill="#d8d9da">%s</text>`+"\n", esc(d.Title))
	fmt.Fprintf(b, `<text x="%d" y="22" text-anchor="end" fill="#8e8e8e">%s – %s UTC, rendered from a run of cmd/render</text>`+"\n",
		width-8, start.UTC().Format("2006-01-02 15:04:05"), end.UTC().Format("15:04:05"))
	x := func(t time.Time, x0, w float64) float64 {
		return x0 + w*float64(t.Sub(start))/float64(end.Sub(start))
	}
	for i, s := range spans { // the phase strip
		x0, x1 := x(s.Start, 8, float64(width-16)), x(s.End, 8, float64(width-16))
		fmt.Fprintf(b, `<rect x="%.1f" y="34" width="%.1f" height="20" fill="%s"/>`, x0, x1-x0, phaseFill(i))
		fmt.Fprintf(b, `<text x="%.1f" y="48" text-anchor="middle" fill="#d8d9da">%s</text>`+"\n", (x0+x1)/2, esc(s.Name))
	}
	for _, p := range d.Panels {
		drawPanel(b, p, spans, start, end, x)
	}
	fmt.Fprintln(b, `</svg>`)
	return b.Flush()
}

func phaseFill(i int) string {
	if i%2 == 0 {
		return "#22252b"
	}
	return "#2c3038"
}

// drawPanel draws panel p at its gridPos: its frame and title, the plot
// with its axes and the phase boundaries, and the legend under it. x maps
// a time into a span of pixels (its start and width).
func drawPanel(b *bufio.Writer, p panel, spans []span, start, end time.Time, x func(time.Time, float64, float64) float64) {
	px, py := float64(p.GridPos.X*unitW+pad), float64(header+p.GridPos.Y*unitH+pad)
	pw, ph := float64(p.GridPos.W*unitW-2*pad), float64(p.GridPos.H*unitH-2*pad)
	fmt.Fprintf(b, `<g><rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" rx="3" fill="#181b1f" stroke="#2b2e33"/>`+"\n", px, py, pw, ph)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" font-size="13" fill="#d8d9da">%s</text>`+"\n", px+8, py+18, esc(p.Title))

	items, lines := layoutLegend(p.Series, px, pw)
	legendTop := py + ph - 6 - float64(lines)*legendLine
	a := plotArea{l: px + 60, r: px + pw - 30, t: py + 30, bot: legendTop - 20, x: x}
	lo, hi := valueRange(p.Series)
	ticks := niceTicks(lo, hi, 4)
	a.lo, a.hi = ticks[0], ticks[len(ticks)-1]

	for i := 1; i < len(spans); i++ { // phase boundaries
		bx := a.xAt(spans[i].Start)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#3d424a" stroke-dasharray="3,3"/>`+"\n", bx, a.t, bx, a.bot)
	}
	a.drawAxes(b, ticks, p.FieldConfig.Defaults.Unit, start, end)
	if len(p.Series) == 0 {
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" fill="#8e8e8e">No data</text>`+"\n", (a.l+a.r)/2, (a.t+a.bot)/2)
	}
	for i, s := range p.Series {
		a.drawSeries(b, s, items[i].color)
	}
	for _, it := range items {
		ly := legendTop + (it.y-1)*legendLine + 10
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="12" height="3" fill="%s"/><text x="%.1f" y="%.1f" fill="#c7d0d9">%s</text>`+"\n",
			it.x, ly-4, it.color, it.x+16, ly, esc(it.name))
	}
	fmt.Fprintln(b, `</g>`)
}

// A legendItem is a series' entry in a panel's legend: its name, where it
// goes (y counts lines from 1) and its color.
type legendItem struct {
	name  string
	x, y  float64
	color string
}

// layoutLegend places the legend of series under a panel at px, pw wide,
// wrapped into lines; it returns the items, one per series, and the
// number of lines (0 without series).
func layoutLegend(series []series, px, pw float64) ([]legendItem, int) {
	var items []legendItem
	lx, lines := px+8, 1
	for i, s := range series {
		wd := 16 + 6.2*float64(len(s.Name)) + 12
		if lx+wd > px+pw-8 && lx > px+8 {
			lx, lines = px+8, lines+1
		}
		items = append(items, legendItem{s.Name, lx, float64(lines), palette[i%len(palette)]})
		lx += wd
	}
	if len(series) == 0 {
		lines = 0
	}
	return items, lines
}

// valueRange returns the range of the values of series, 0 included, at
// least 1 wide.
func valueRange(series []series) (lo, hi float64) {
	for _, s := range series {
		for _, pt := range s.Points {
			lo, hi = math.Min(lo, pt.V), math.Max(hi, pt.V)
		}
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

// A plotArea is where a panel plots its series: from l to r across and
// from t down to bot, values from lo at the bottom to hi at the top, times
// placed by x (see draw).
type plotArea struct {
	l, r, t, bot float64
	lo, hi       float64
	x            func(time.Time, float64, float64) float64
}

func (a plotArea) xAt(t time.Time) float64 { return a.x(t, a.l, a.r-a.l) }

func (a plotArea) yAt(v float64) float64 { return a.bot - (a.bot-a.t)*(v-a.lo)/(a.hi-a.lo) }

// drawAxes draws a grid line and a label, in unit, for every value tick,
// and time labels under the plot from start to end, every 15 s or a
// doubling of it, at most six or so.
func (a plotArea) drawAxes(b *bufio.Writer, ticks []float64, unit string, start, end time.Time) {
	for _, v := range ticks {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#2b2e33"/>`, a.l, a.yAt(v), a.r, a.yAt(v))
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#8e8e8e">%s</text>`+"\n", a.l-4, a.yAt(v)+4, esc(format(v, unit, math.Max(math.Abs(a.lo), math.Abs(a.hi)), ticks[1]-ticks[0])))
	}
	total := end.Sub(start)
	stepT := 15 * time.Second
	for total/stepT > 6 {
		stepT *= 2
	}
	for o := time.Duration(0); o <= total; o += stepT {
		anchor := "middle"
		if o == 0 {
			anchor = "start"
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="%s" fill="#8e8e8e">%s</text>`, a.xAt(start.Add(o)), a.bot+15, anchor, start.Add(o).UTC().Format("15:04:05"))
	}
	fmt.Fprintln(b)
}

// drawSeries draws s as a line in color, broken where a sample is
// missing.
func (a plotArea) drawSeries(b *bufio.Writer, s series, color string) {
	var path strings.Builder
	for j, pt := range s.Points {
		cmd := "L"
		if j == 0 || pt.T.Sub(s.Points[j-1].T) > 2*time.Second { // a gap: no sample
			cmd = "M"
		}
		fmt.Fprintf(&path, "%s%.1f,%.1f", cmd, a.xAt(pt.T), a.yAt(pt.V))
	}
	fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", path.String(), color)
}

// niceTicks returns n or so evenly spaced round values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for v := math.Floor(lo/step) * step; ; v += step {
		out = append(out, v)
		if v >= hi-step*1e-9 {
			return out
		}
	}
}

// format writes v in Grafana's unit for an axis reaching top (which picks
// the scale: ms or s, k or M) with ticks step apart (which picks the
// decimals).
func format(v float64, unit string, top, step float64) string {
	top = math.Max(math.Abs(v), math.Abs(top))
	switch unit {
	case "percentunit":
		return trim(v*100, step*100) + "%"
	case "s":
		switch {
		case top >= 1:
			return trim(v, step) + " s"
		case top >= 1e-3:
			return trim(v*1e3, step*1e3) + " ms"
		default:
			return trim(v*1e6, step*1e6) + " µs"
		}
	case "reqps":
		return si(v, top, step) + " req/s"
	case "ops":
		return si(v, top, step) + " ops/s"
	default:
		return si(v, top, step)
	}
}

func si(v, top, step float64) string {
	for _, u := range []struct {
		f float64
		s string
	}{{1e9, "G"}, {1e6, "M"}, {1e3, "k"}} {
		if top >= u.f {
			return trim(v/u.f, step/u.f) + u.s
		}
	}
	return trim(v, step)
}

// trim prints v with as many decimals as a step of step needs (at most 3).
func trim(v, step float64) string {
	dec := 0
	for dec < 3 && step > 0 && math.Abs(step*math.Pow(10, float64(dec))-math.Round(step*math.Pow(10, float64(dec)))) > 1e-9 {
		dec++
	}
	return fmt.Sprintf("%.*f", dec, v)
}

func esc(s string) string {
	var buf bytes.Buffer
	_ = xml.EscapeText(&buf, []byte(s))
	return buf.String()
}

// summarize writes one line per panel: the largest value of each series,
// and how many series stayed at zero.
func summarize(w io.Writer, d *dashboard) {
	for _, p := range d.Panels {
		var parts []string
		zero := 0
		for _, s := range p.Series {
			peak := 0.0
			for _, pt := range s.Points {
				peak = math.Max(peak, math.Abs(pt.V))
			}
			if peak == 0 {
				zero++
				continue
			}
			parts = append(parts, fmt.Sprintf("%s max %s", s.Name, format(peak, p.FieldConfig.Defaults.Unit, peak, sigStep(peak))))
		}
		if zero > 0 {
			parts = append(parts, fmt.Sprintf("%d at zero", zero))
		}
		if len(parts) == 0 {
			parts = []string{"no data"}
		}
		fmt.Fprintf(w, "%-32s %2d series: %s\n", p.Title, len(p.Series), strings.Join(parts, "; "))
	}
}

// sigStep is the step that shows v to three significant digits.
func sigStep(v float64) float64 {
	if v == 0 || !finite(v) {
		return 1
	}
	return math.Pow(10, math.Floor(math.Log10(math.Abs(v)))-2)
}
