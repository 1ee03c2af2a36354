package bench

import (
	"bufio"
	"fmt"
	"io"
	"time"
)

// CompareRun is one run of a comparison: a name and its origin figures.
type CompareRun struct {
	Name   string
	Origin *OriginStats
}

// The comparison's colours: the fixed limits, then the autopilot.
var compareColors = []string{colLimit, colActive, colRate, colQueue}

// PlotCompareSVG writes one SVG document comparing runs second by second,
// in five panels: the origin's p99 latency (with twice its healthy p99
// dashed), its failed requests a second, the active users with the
// effective total_active_users, the effective new_users_per_minute, and
// the queue's length. The document uses
// no script and no external resource.
func PlotCompareSVG(w io.Writer, runs []CompareRun, title string) error {
	bw := bufio.NewWriter(w)
	p := &svgPlot{w: bw}
	height := plotTop + 5*(panelHeight+panelGap)
	p.printf(`<?xml version="1.0" encoding="UTF-8"?>` + "\n")
	p.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="12" fill="%s">`+"\n",
		plotWidth, height, plotWidth, height, fontFamily, colText)
	p.printf(`<title>%s</title>`+"\n", esc(title))
	p.printf(`<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", plotWidth, height)
	p.printf(`<text x="%d" y="34" font-size="20" font-weight="600">%s</text>`+"\n", plotLeft, esc(title))
	series := make([][]OriginSecond, len(runs))
	span := time.Duration(0)
	healthy := 0.0
	for i, r := range runs {
		if r.Origin == nil {
			continue
		}
		series[i] = r.Origin.Seconds
		if n := len(series[i]); n > 0 {
			span = max(span, time.Duration(series[i][n-1].T)*time.Second)
		}
		healthy = r.Origin.HealthyP99Ms
	}
	xs := newTimeAxis(span)
	type panel struct {
		title, ylabel string
		value         func(OriginSecond) int
		limit         func(OriginSecond) int // dashed, per run (nil: none)
		mark          float64                // a dashed level (0: none)
		markName      string
	}
	panels := []panel{
		{"Origin p99 latency", "ms", func(s OriginSecond) int { return int(s.P99Ms + 0.5) }, nil, 2 * healthy,
			fmt.Sprintf("2 x healthy p99 (%.0f ms)", 2*healthy)},
		{"Origin failures (timeouts)", "requests a second", func(s OriginSecond) int { return s.Errors }, nil, 0, ""},
		{"Active users and the effective total_active_users", "visitors", func(s OriginSecond) int { return int(s.Active) },
			func(s OriginSecond) int { return s.Concurrency }, 0, ""},
		{"Effective new_users_per_minute", "admissions a minute", func(s OriginSecond) int { return s.Rate }, nil, 0, ""},
		{"Queue length", "visitors waiting", func(s OriginSecond) int { return s.Waiting }, nil, 0, ""},
	}
	for i, pn := range panels {
		top := float64(plotTop + i*(panelHeight+panelGap) + 32)
		ymax := pn.mark
		for _, ss := range series {
			for _, s := range ss {
				ymax = max(ymax, float64(pn.value(s)))
				if pn.limit != nil {
					ymax = max(ymax, float64(pn.limit(s)))
				}
			}
		}
		ys := newLinearAxis(ymax * 1.08)
		p.panelTitle(top, pn.title)
		p.frame(top, xs, ys, pn.ylabel)
		var legend []legendItem
		for j, ss := range series {
			if len(ss) == 0 {
				continue
			}
			color := compareColors[j%len(compareColors)]
			p.line(top, xs, ys, asSamples(ss, pn.value), func(s Sample) int { return s.Active }, color, runs[j].Name)
			legend = append(legend, legendItem{color, false, runs[j].Name})
			if pn.limit != nil {
				p.dashed(top, xs, ys, asSamples(ss, pn.limit), color, runs[j].Name+" limit")
			}
		}
		if pn.mark > 0 {
			y := top + ys.pos(pn.mark)
			p.printf(`<line x1="%d" y1="%s" x2="%d" y2="%s" stroke="%s" stroke-width="1.5" stroke-dasharray="6 4"><title>%s</title></line>`+"\n",
				plotLeft, num(y), plotLeft+plotInner, num(y), colAxis, esc(pn.markName))
			legend = append(legend, legendItem{colAxis, true, pn.markName})
		}
		if pn.limit != nil {
			legend = append(legend, legendItem{colMuted, true, "limit in force"})
		}
		p.legend(top, legend)
	}
	p.printf("</svg>\n")
	if p.err != nil {
		return p.err
	}
	return bw.Flush()
}

// asSamples maps seconds to Samples whose Active holds value, for line.
func asSamples(ss []OriginSecond, value func(OriginSecond) int) []Sample {
	out := make([]Sample, len(ss))
	for i, s := range ss {
		out[i] = Sample{T: time.Duration(s.T) * time.Second, Active: value(s)}
	}
	return out
}

// dashed draws a step line of samples' Active, dashed.
func (p *svgPlot) dashed(top float64, xs, ys axis, series []Sample, color, name string) {
	p.printf(`<polyline fill="none" stroke="%s" stroke-width="1.2" stroke-dasharray="5 4" points="`, color)
	prev := -1
	for i, s := range series {
		if i > 0 && s.Active == prev && i != len(series)-1 {
			continue
		}
		x := float64(plotLeft) + xs.pos(float64(s.T))
		if i > 0 {
			p.printf(" %s,%s", num(x), num(top+ys.pos(float64(prev))))
		}
		p.printf(" %s,%s", num(x), num(top+ys.pos(float64(s.Active))))
		prev = s.Active
	}
	p.printf(`"><title>%s</title></polyline>`+"\n", esc(name))
}
