package bench_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// plotInput is a small fixed run: a queue builds in the first minute and
// drains by the fourth.
func plotInput() ([]bench.Sample, bench.Limits, []bench.MinuteWaits) {
	var series []bench.Sample
	for i := range 25 {
		t := time.Duration(i) * 10 * time.Second
		active := min(i*12, 100)
		waiting := max(0, 120-(i-6)*(i-6)*4)
		if i < 3 {
			waiting = i * 40
		}
		series = append(series, bench.Sample{T: t, Active: active, Waiting: waiting, AdmittedPerMinute: min(i*15, 150)})
	}
	lim := bench.Limits{TotalActiveUsers: 100, NewUsersPerMinute: 150, SessionDuration: time.Minute, RefreshInterval: 10 * time.Second}
	hist := func(cs ...int) []int { return append(cs, make([]int, len(bench.WaitBuckets())+1-len(cs))...) }
	waits := []bench.MinuteWaits{
		{Minute: 0, Arrivals: 200, Admitted: 190, P50: 45, P95: 170, P99: 230, Hist: hist(30, 20, 50, 60, 30)},
		{Minute: 1, Arrivals: 40, Admitted: 40, P50: 95, P95: 150, P99: 160, Hist: hist(0, 0, 5, 30, 5)},
		{Minute: 2},
		{Minute: 3, Arrivals: 5, Admitted: 5, P50: 2, P95: 3, P99: 3, Hist: hist(5)},
	}
	return series, lim, waits
}

func TestPlotSVGGolden(t *testing.T) {
	t.Parallel()
	series, lim, waits := plotInput()
	var buf bytes.Buffer
	if err := bench.PlotSVG(&buf, series, lim, waits, "Flash crowd <test> & \"quotes\""); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes())
	golden := filepath.Join("testdata", "plot.golden.svg")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to write it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("PlotSVG differs from %s (run go test -update to accept it)", golden)
	}
}

// TestPlotSVGDegenerate checks that empty and odd inputs still make a
// sane document.
func TestPlotSVGDegenerate(t *testing.T) {
	t.Parallel()
	one := []bench.Sample{{T: 0, Active: 3}}
	zeros := []bench.Sample{{T: 0}, {T: time.Second}, {T: 2 * time.Second}}
	huge := []bench.Sample{{T: 0, Active: 1 << 40, Waiting: 1 << 40, AdmittedPerMinute: 1 << 40}, {T: 1000 * time.Hour}}
	long := make([]bench.Sample, 20000) // more samples than pixels
	for i := range long {
		long[i] = bench.Sample{T: time.Duration(i) * time.Second, Active: i % 977, Waiting: 20000 - i, AdmittedPerMinute: i % 301}
	}
	manyMinutes := make([]bench.MinuteWaits, 1440)
	for i := range manyMinutes {
		manyMinutes[i] = bench.MinuteWaits{Minute: i, Arrivals: 1, Admitted: 1, P50: float64(i) * 60, P95: 1e9, P99: 1e9, Hist: []int{1}}
	}
	for name, c := range map[string]struct {
		series []bench.Sample
		lim    bench.Limits
		waits  []bench.MinuteWaits
	}{
		"empty":           {},
		"one sample":      {series: one, lim: bench.Limits{TotalActiveUsers: 2}},
		"all zero":        {series: zeros, waits: []bench.MinuteWaits{{}}},
		"huge":            {series: huge, lim: bench.Limits{TotalActiveUsers: -5, NewUsersPerMinute: -1}},
		"long":            {series: long, lim: bench.Limits{TotalActiveUsers: 900, NewUsersPerMinute: 300}},
		"a day of waits":  {waits: manyMinutes},
		"bad histograms":  {waits: []bench.MinuteWaits{{Minute: -1, Hist: []int{5}}, {Minute: 7, Hist: make([]int, 40)}}},
		"negative values": {series: []bench.Sample{{T: -time.Second, Active: -4, Waiting: -1}, {T: -2 * time.Second}}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			if err := bench.PlotSVG(&buf, c.series, c.lim, c.waits, name); err != nil {
				t.Fatal(err)
			}
			checkSVG(t, buf.Bytes())
			if name == "long" && buf.Len() > 400_000 {
				t.Errorf("%d bytes for %d samples: the lines are not thinned", buf.Len(), len(long))
			}
		})
	}
}

// TestPlotSVGOfSimulation plots a simulated run through SimSummary.
func TestPlotSVGOfSimulation(t *testing.T) {
	t.Parallel()
	cfg := mediumConfig(t, 2)
	tl := simulate(t, cfg)
	lim := bench.RoomLimits(&cfg.Room)
	sum := bench.SimSummary(tl, lim, time.Second)
	var buf bytes.Buffer
	if err := bench.PlotSVG(&buf, sum.Series, lim, sum.Waits, "medium flash crowd"); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, buf.Bytes())
	if dir := os.Getenv("USHER_PLOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "simulate.svg"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type failWriter struct{ n int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestPlotSVGWriteError(t *testing.T) {
	t.Parallel()
	series, lim, waits := plotInput()
	var buf bytes.Buffer
	if err := bench.PlotSVG(&buf, series, lim, waits, "x"); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, buf.Len() / 2, buf.Len() - 1} {
		if err := bench.PlotSVG(&failWriter{n: n}, series, lim, waits, "x"); err == nil {
			t.Errorf("writer failing after %d bytes: no error", n)
		}
	}
}

// checkSVG parses doc as XML from start to end and checks what every
// plot must hold.
func checkSVG(t *testing.T, doc []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var root string
	depth := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not XML: %v", err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if root != "" {
					t.Fatalf("second root element %s", e.Name.Local)
				}
				root = e.Name.Space + " " + e.Name.Local
			}
			depth++
		case xml.EndElement:
			depth--
		}
	}
	if root != "http://www.w3.org/2000/svg svg" || depth != 0 {
		t.Fatalf("root %q, depth at the end %d", root, depth)
	}
	s := string(doc)
	for _, bad := range []string{"NaN", "Inf", "%!"} {
		if strings.Contains(s, bad) {
			t.Errorf("the SVG holds %q", bad)
		}
	}
	for _, title := range []string{"Active users", "Queue length", "Admissions per minute", "Wait by arrival minute"} {
		if !strings.Contains(s, ">"+title+"<") {
			t.Errorf("no panel %q", title)
		}
	}
}
