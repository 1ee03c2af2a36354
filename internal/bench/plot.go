package bench

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// The plot's geometry, in SVG user units (pixels).
const (
	plotWidth   = 960
	plotLeft    = 104 // room for the y axis labels and title
	plotRight   = 24  // right margin
	plotTop     = 64  // room for the document title
	panelHeight = 210 // the plot area of one panel
	panelGap    = 96  // panel title above, x axis labels below
	plotInner   = plotWidth - plotLeft - plotRight
	fontFamily  = "system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif"
)

// The plot's colours.
const (
	colActive  = "#1f77b4"
	colQueue   = "#ff7f0e"
	colRate    = "#2ca02c"
	colLimit   = "#d62728"
	colGrid    = "#e5e5e5"
	colAxis    = "#333333"
	colText    = "#222222"
	colMuted   = "#666666"
	colEmpty   = "#f4f4f4"
	colP50     = "#111111"
	colP95     = "#d62728"
	heatLow    = "#deebf7"
	heatMiddle = "#4292c6"
	heatHigh   = "#08306b"
)

// PlotSVG writes one SVG document of a run, in four panels: active users
// over time against total_active_users; the queue's length over time;
// admissions in the last 60 s over time against new_users_per_minute;
// and a heatmap of the wait by arrival minute (x: the minute, y: the
// buckets of WaitBuckets, colour: how many visitors), with the p50 and p95
// waits drawn over it. series is a Series (or SimSummary's), waits is
// SimSummary's Waits; either may be empty. The document uses no script
// and no external resource.
func PlotSVG(w io.Writer, series []Sample, lim Limits, waits []MinuteWaits, title string) error {
	bw := bufio.NewWriter(w)
	p := &svgPlot{w: bw}
	height := plotTop + 4*(panelHeight+panelGap)
	p.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" fill="%s">`+"\n",
		plotWidth, height, plotWidth, height, fontFamily, colText)
	p.printf(`<title>%s</title>`+"\n", esc(title))
	p.printf(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", plotWidth, height)
	p.printf(`<text x="%d" y="34" font-size="20" font-weight="600">%s</text>`+"\n", plotLeft, esc(title))

	span := time.Duration(0)
	if n := len(series); n > 0 {
		span = series[n-1].T
	}
	xs := newTimeAxis(span)
	panels := []struct {
		title, ylabel, color, name string
		value                      func(Sample) int
		limit                      int
		limitName                  string
	}{
		{"Active users", "visitors", colActive, "active users", func(s Sample) int { return s.Active },
			lim.TotalActiveUsers, "total_active_users"},
		{"Queue length", "visitors waiting", colQueue, "waiting", func(s Sample) int { return s.Waiting }, 0, ""},
		{"Admissions per minute", "admissions in the last 60 s", colRate, "admitted in the last 60 s",
			func(s Sample) int { return s.AdmittedPerMinute }, lim.NewUsersPerMinute, "new_users_per_minute"},
	}
	for i, pn := range panels {
		top := float64(plotTop + i*(panelHeight+panelGap) + 32)
		ymax := float64(max(pn.limit, 0))
		for _, s := range series {
			ymax = max(ymax, float64(pn.value(s)))
		}
		ys := newLinearAxis(ymax * 1.08)
		p.panelTitle(top, pn.title)
		p.frame(top, xs, ys, pn.ylabel)
		if len(series) == 0 {
			p.noData(top)
			continue
		}
		p.line(top, xs, ys, series, pn.value, pn.color, pn.name)
		legend := []legendItem{{pn.color, false, pn.name}}
		if pn.limit > 0 {
			y := top + ys.pos(float64(pn.limit))
			p.printf(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"><title>%s %d</title></line>`+"\n",
				plotLeft, num(y), plotLeft+plotInner, num(y), colLimit, pn.limitName, pn.limit)
			legend = append(legend, legendItem{colLimit, true, fmt.Sprintf("%s %d", pn.limitName, pn.limit)})
		}
		p.legend(top, legend)
	}
	p.heatmap(float64(plotTop+3*(panelHeight+panelGap)+32), waits)
	p.printf("</svg>\n")
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

// svgPlot writes SVG text, keeping the first error.
type svgPlot struct {
	w   *bufio.Writer
	err error
}

func (p *svgPlot) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// axis maps data values to positions along a panel.
type axis struct {
	max, step float64 // the axis runs from 0 to max, ticks every step
	length    float64 // pixels
	flip      bool    // y axes grow upwards
	unit      float64 // data units per displayed unit (time axes)
	label     string
}

// newLinearAxis is a y axis from zero to at least top, with round ticks.
func newLinearAxis(top float64) axis {
	if !(top > 0) || math.IsInf(top, 0) {
		top = 1
	}
	step := max(niceStep(top/6), 1) // counts
	return axis{max: math.Ceil(top/step) * step, step: step, length: panelHeight, flip: true, unit: 1}
}

// newTimeAxis is an x axis over span, in seconds, minutes or hours.
func newTimeAxis(span time.Duration) axis {
	if span <= 0 {
		span = time.Minute
	}
	unit, label := time.Second, "time since start (s)"
	switch {
	case span > 3*time.Hour:
		unit, label = time.Hour, "time since start (h)"
	case span > 3*time.Minute:
		unit, label = time.Minute, "time since start (min)"
	}
	top := float64(span) / float64(unit)
	step := niceStep(top / 8)
	return axis{max: math.Ceil(top/step) * step, step: step, length: plotInner, unit: float64(unit), label: label}
}

// niceStep is 1, 2, 2.5 or 5 times a power of ten, at least x.
func niceStep(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x*(1-1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// pos is v's offset along the axis, in pixels (from the top for y axes).
func (a axis) pos(v float64) float64 {
	f := v / a.unit / a.max
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	f = min(max(f, 0), 1)
	if a.flip {
		return a.length * (1 - f)
	}
	return a.length * f
}

// ticks are the axis's tick values, in displayed units.
func (a axis) ticks() []float64 {
	var out []float64
	for k := 0; ; k++ {
		v := float64(k) * a.step
		if v > a.max*(1+1e-9) || k > 100 {
			return out
		}
		out = append(out, v)
	}
}

// tickLabel writes v with as many decimals as the step needs.
func (a axis) tickLabel(v float64) string {
	dec := 0
	if a.step < 1 {
		dec = int(math.Ceil(-math.Log10(a.step)))
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if dec == 0 && v >= 10000 {
		s = thousands(s)
	}
	return s
}

// thousands puts thin spaces between groups of three digits.
func thousands(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteRune('\u2009')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (p *svgPlot) panelTitle(top float64, title string) {
	p.printf(`<text x="%d" y="%s" font-size="15" font-weight="600">%s</text>`+"\n", plotLeft, num(top-14), esc(title))
}

// frame draws a panel's grid, axes, ticks and axis labels.
func (p *svgPlot) frame(top float64, xs, ys axis, ylabel string) {
	right, bottom := float64(plotLeft+plotInner), top+panelHeight
	p.printf(`<g font-size="11" fill="%s">`+"\n", colMuted)
	for _, v := range ys.ticks() {
		y := top + ys.pos(v)
		p.printf(`<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, plotLeft, num(y), num(right), num(y), colGrid)
		p.printf(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-6, num(y+4), ys.tickLabel(v))
	}
	for _, v := range xs.ticks() {
		x := float64(plotLeft) + xs.pos(v*xs.unit)
		p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(bottom), num(x), num(bottom+5), colAxis)
		p.printf(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(x), num(bottom+18), xs.tickLabel(v))
	}
	p.printf("</g>\n")
	p.printf(`<rect x="%d" y="%s" width="%d" height="%d" fill="none" stroke="%s"/>`+"\n", plotLeft, num(top), plotInner, panelHeight, colAxis)
	p.printf(`<text x="%s" y="%s" text-anchor="middle" font-size="12">%s</text>`+"\n", num(float64(plotLeft)+plotInner/2), num(bottom+36), esc(xs.label))
	cy := top + panelHeight/2
	p.printf(`<text x="18" y="%s" text-anchor="middle" font-size="12" transform="rotate(-90 18 %s)">%s</text>`+"\n", num(cy), num(cy), esc(ylabel))
}

func (p *svgPlot) noData(top float64) {
	p.printf(`<text x="%s" y="%s" text-anchor="middle" font-size="14" fill="%s">no data</text>`+"\n",
		num(float64(plotLeft)+plotInner/2), num(top+panelHeight/2), colMuted)
}

// line draws value over series as a polyline, keeping each pixel
// column's lowest and highest values when there are more samples than
// pixels, so that peaks stay visible.
func (p *svgPlot) line(top float64, xs, ys axis, series []Sample, value func(Sample) int, color, name string) {
	type pt struct{ x, y float64 }
	var pts []pt
	col, lo, hi := -1, pt{}, pt{}
	flush := func() {
		if col < 0 {
			return
		}
		if lo.x <= hi.x {
			pts = append(pts, lo)
			if hi != lo {
				pts = append(pts, hi)
			}
		} else {
			pts = append(pts, hi, lo)
		}
	}
	for _, s := range series {
		q := pt{float64(plotLeft) + xs.pos(float64(s.T)), top + ys.pos(float64(value(s)))}
		c := int(q.x * 2) // half-pixel columns
		if c != col {
			flush()
			col, lo, hi = c, q, q
			continue
		}
		if q.y > lo.y { // lower on screen: a lower value
			lo = q
		}
		if q.y < hi.y {
			hi = q
		}
	}
	flush()
	p.printf(`<polyline fill="none" stroke="%s" stroke-width="1.6" stroke-linejoin="round" points="`, color)
	for i, q := range pts {
		if i > 0 {
			p.printf(" ")
		}
		p.printf("%s,%s", num(q.x), num(q.y))
	}
	p.printf(`"><title>%s</title></polyline>`+"\n", esc(name))
}

type legendItem struct {
	color  string
	dashed bool
	label  string
}

// legend draws items in a row above the top right corner of a panel.
func (p *svgPlot) legend(top float64, items []legendItem) {
	x := float64(plotLeft + plotInner)
	for _, it := range items {
		x -= 36 + textWidth(it.label) + 16
	}
	y := top - 18
	p.printf(`<g font-size="12">`)
	for _, it := range items {
		dash := ""
		if it.dashed {
			dash = ` stroke-dasharray="6 4"`
		}
		p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"%s/>`, num(x), num(y), num(x+28), num(y), it.color, dash)
		p.printf(`<text x="%s" y="%s">%s</text>`, num(x+36), num(y+4), esc(it.label))
		x += 36 + textWidth(it.label) + 16
	}
	p.printf("</g>\n")
}

// textWidth is about how wide label is at 12 px.
func textWidth(label string) float64 { return 6.6 * float64(len([]rune(label))) }

// waitBucketLabels name the rows of the heatmap, WaitBuckets' buckets.
func waitBucketLabels() []string {
	return []string{"< 10 s", "10–30 s", "30 s–1 min", "1–2 min", "2–5 min", "5–10 min",
		"10–20 min", "20–30 min", "30 min–1 h", "1–2 h", "2–4 h", "≥ 4 h"}
}

// heatmap draws the wait by arrival minute.
func (p *svgPlot) heatmap(top float64, waits []MinuteWaits) {
	bounds := WaitBuckets()
	labels := waitBucketLabels()
	rows := len(bounds) + 1
	rowH := float64(panelHeight) / float64(rows)
	p.panelTitle(top, "Wait by arrival minute")
	p.printf(`<rect x="%d" y="%s" width="%d" height="%d" fill="%s"/>`+"\n", plotLeft, num(top), plotInner, panelHeight, colEmpty)
	// Rows, from the shortest wait at the bottom.
	p.printf(`<g font-size="11" fill="%s">`+"\n", colMuted)
	for r := range rows {
		y := top + float64(rows-r)*rowH
		p.printf(`<text x="%d" y="%s" text-anchor="end">%s</text>`+"\n", plotLeft-6, num(y-rowH/2+4), esc(labels[r]))
	}
	p.printf("</g>\n")
	cols := 1
	for _, m := range waits {
		cols = max(cols, min(m.Minute+1, 1<<20))
	}
	xs := axis{max: float64(cols), step: niceStep(float64(cols) / 8), length: plotInner, unit: 1, label: "arrival minute (since start)"}
	if xs.step < 1 {
		xs.step = 1
	}
	most := 0
	for _, m := range waits {
		for _, c := range m.Hist {
			most = max(most, c)
		}
	}
	colW := float64(plotInner) / float64(cols)
	for _, m := range waits {
		if m.Minute < 0 || m.Minute >= cols {
			continue
		}
		x := float64(plotLeft) + float64(m.Minute)*colW
		for r, c := range m.Hist {
			if c <= 0 || r >= rows {
				continue
			}
			y := top + float64(rows-1-r)*rowH
			p.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>minute %d, wait %s: %d</title></rect>`+"\n",
				num(x), num(y), num(colW), num(rowH), heatColor(float64(c)/float64(most)), m.Minute, esc(labels[r]), c)
		}
	}
	// The p50 and p95 waits, placed within their bucket's row.
	for _, pc := range []struct {
		color string
		get   func(MinuteWaits) float64
	}{{colP50, func(m MinuteWaits) float64 { return m.P50 }}, {colP95, func(m MinuteWaits) float64 { return m.P95 }}} {
		// One stroke per run of minutes with admissions; a short dash for
		// a lone minute.
		type pt struct{ x, y float64 }
		var runs [][]pt
		prev := -2
		for _, m := range waits {
			if m.Admitted == 0 || m.Minute < 0 || m.Minute >= cols {
				continue
			}
			q := pt{float64(plotLeft) + (float64(m.Minute)+0.5)*colW, top + float64(panelHeight) - waitRowPos(pc.get(m), bounds)*rowH}
			if m.Minute != prev+1 || len(runs) == 0 {
				runs = append(runs, nil)
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], q)
			prev = m.Minute
		}
		var d []string
		for _, run := range runs {
			if len(run) == 1 {
				d = append(d, "M"+num(run[0].x-3)+" "+num(run[0].y)+" h6")
				continue
			}
			for k, q := range run {
				cmd := "L"
				if k == 0 {
					cmd = "M"
				}
				d = append(d, cmd+num(q.x)+" "+num(q.y))
			}
		}
		if len(d) > 0 {
			p.printf(`<path fill="none" stroke="%s" stroke-width="1.5" stroke-linecap="round" d="%s"/>`+"\n", pc.color, strings.Join(d, " "))
		}
	}
	// Axes over the cells.
	bottom := top + panelHeight
	p.printf(`<rect x="%d" y="%s" width="%d" height="%d" fill="none" stroke="%s"/>`+"\n", plotLeft, num(top), plotInner, panelHeight, colAxis)
	p.printf(`<g font-size="11" fill="%s">`+"\n", colMuted)
	for _, v := range xs.ticks() {
		x := float64(plotLeft) + (v+0.5)*colW
		if v >= float64(cols) {
			continue
		}
		p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"/>`, num(x), num(bottom), num(x), num(bottom+5), colAxis)
		p.printf(`<text x="%s" y="%s" text-anchor="middle">%s</text>`+"\n", num(x), num(bottom+18), xs.tickLabel(v))
	}
	p.printf("</g>\n")
	p.printf(`<text x="%s" y="%s" text-anchor="middle" font-size="12">%s</text>`+"\n", num(float64(plotLeft)+plotInner/2), num(bottom+36), xs.label)
	cy := top + panelHeight/2
	p.printf(`<text x="14" y="%s" text-anchor="middle" font-size="12" transform="rotate(-90 14 %s)">wait (admitted visitors)</text>`+"\n", num(cy), num(cy))
	if len(waits) == 0 || most == 0 {
		p.noData(top)
	}
	p.heatLegend(top, most)
}

// waitRowPos is where a wait of sec seconds sits on the heatmap's rows,
// in rows from the bottom: linear within its bucket.
func waitRowPos(sec float64, bounds []time.Duration) float64 {
	if math.IsNaN(sec) || sec <= 0 {
		return 0
	}
	lo := 0.0
	for r, b := range bounds {
		hi := b.Seconds()
		if sec < hi {
			return float64(r) + (sec-lo)/(hi-lo)
		}
		lo = hi
	}
	// The last bucket is open: place waits up to twice its bound in it.
	return float64(len(bounds)) + min((sec-lo)/lo, 1)
}

// heatLegend draws the colour scale and the percentile lines' key above
// the heatmap's top right corner.
func (p *svgPlot) heatLegend(top float64, most int) {
	x := float64(plotLeft+plotInner) - 430
	y := top - 26
	p.printf(`<defs><linearGradient id="heat"><stop offset="0" stop-color="%s"/><stop offset="0.5" stop-color="%s"/><stop offset="1" stop-color="%s"/></linearGradient></defs>`+"\n",
		heatLow, heatMiddle, heatHigh)
	p.printf(`<g font-size="11">`)
	p.printf(`<text x="%s" y="%s" text-anchor="end">visitors</text>`, num(x+46), num(y+10))
	p.printf(`<text x="%s" y="%s" text-anchor="end">1</text>`, num(x+60), num(y+10))
	p.printf(`<rect x="%s" y="%s" width="120" height="10" fill="url(#heat)" stroke="%s"/>`, num(x+64), num(y+1), colGrid)
	p.printf(`<text x="%s" y="%s">%s</text>`, num(x+188), num(y+10), thousands(strconv.Itoa(max(most, 1))))
	p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/><text x="%s" y="%s">p50</text>`,
		num(x+250), num(y+6), num(x+274), num(y+6), colP50, num(x+278), num(y+10))
	p.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2"/><text x="%s" y="%s">p95 wait</text>`,
		num(x+312), num(y+6), num(x+336), num(y+6), colP95, num(x+340), num(y+10))
	p.printf("</g>\n")
}

// heatColor is the colour of a cell holding f of the fullest cell's count
// (0 < f <= 1): a square-root scale, so that small counts still show.
func heatColor(f float64) string {
	if math.IsNaN(f) {
		f = 0
	}
	f = math.Sqrt(min(max(f, 0), 1))
	a, b, t := heatLow, heatMiddle, f*2
	if f > 0.5 {
		a, b, t = heatMiddle, heatHigh, f*2-1
	}
	ra, ga, ba := hexRGB(a)
	rb, gb, bb := hexRGB(b)
	mix := func(x, y int) int { return int(math.Round(float64(x) + (float64(y)-float64(x))*t)) }
	return fmt.Sprintf("#%02x%02x%02x", mix(ra, rb), mix(ga, gb), mix(ba, bb))
}

func hexRGB(s string) (r, g, b int) {
	v, _ := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	return int(v >> 16 & 0xff), int(v >> 8 & 0xff), int(v & 0xff)
}

// num writes a coordinate with one decimal; never NaN or Inf.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	s := strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
	if s == "-0" {
		s = "0"
	}
	return s
}

// esc escapes text for SVG content and attribute values.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		case '\'':
			b.WriteString("&#39;")
		default:
			if r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
				continue // not allowed in XML
			}
			b.WriteRune(r)
		}
	}
	return b.String()
}

// WritePlot writes a flash crowd's plot of tl under lim to the file path:
// PlotSVG of its summary at one-second steps.
func WritePlot(path string, tl *Timeline, lim Limits, title string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sum := SimSummary(tl, lim, time.Second)
	if err := PlotSVG(f, sum.Series, lim, sum.Waits, title); err != nil {
		return err
	}
	return f.Close()
}
