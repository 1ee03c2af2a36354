package bench

import (
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

func TestPlotCompareSVG(t *testing.T) {
	o := &OriginStats{HealthyP99Ms: 120, Seconds: []OriginSecond{
		{T: 0, Requests: 10, P99Ms: 100, Active: 5, Rate: 60, Concurrency: 100, Waiting: 3},
		{T: 1, Requests: 12, Errors: 2, P99Ms: 900, Active: 9, Rate: 30, Concurrency: 100, Waiting: 4},
	}}
	var b strings.Builder
	if err := PlotCompareSVG(&b, []CompareRun{{"fixed limits", o}, {"autopilot", o}, {"none", nil}}, "a <title>"); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	dec := xml.NewDecoder(strings.NewReader(out))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("not well-formed XML: %v", err)
		}
	}
	for _, want := range []string{"Origin p99 latency", "2 x healthy p99 (240 ms)", "fixed limits", "autopilot", "a &lt;title&gt;", "Effective new_users_per_minute"} {
		if !strings.Contains(out, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
}
