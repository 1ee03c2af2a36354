package bench

import (
	"bufio"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Arrivals is an arrival curve: when each visitor first reaches the room,
// as offsets from the start of the run. Make one with ParseArrivals or
// ArrivalsAt.
type Arrivals struct {
	spec    string
	kind    string // flash, steady, ramp, list
	n       int
	over    time.Duration
	rate    float64         // steady:R/s, visitors per second
	offsets []time.Duration // list (csv and ArrivalsAt), sorted
}

// ParseArrivals parses an arrival curve:
//
//	flash:N@D     N visitors, arrival times drawn uniformly over D (seeded)
//	steady:R/s@D  R visitors a second (R may be a decimal) for D, evenly
//	              spaced; steady:R/m@D counts per minute
//	steady:N@D    N visitors evenly spaced over D
//	ramp:N@D      N visitors whose arrival rate grows linearly from zero
//	              over D
//	csv:FILE      one offset in seconds per line (decimals allowed; blank
//	              lines and lines starting with # are skipped; only the
//	              first comma-separated field of a line is read)
//
// D is a Go duration (10s, 2m). The file of csv:FILE is read here.
func ParseArrivals(spec string) (Arrivals, error) {
	bad := func(format string, args ...any) (Arrivals, error) {
		return Arrivals{}, fmt.Errorf("arrivals %q: %s", spec, fmt.Sprintf(format, args...))
	}
	kind, rest, ok := strings.Cut(strings.TrimSpace(spec), ":")
	if !ok || rest == "" {
		return bad("want flash:N@D, steady:R/s@D, steady:N@D, ramp:N@D or csv:FILE")
	}
	a := Arrivals{spec: spec, kind: kind}
	switch kind {
	case "flash", "steady", "ramp":
	case "csv":
		offs, err := readOffsets(rest)
		if err != nil {
			return bad("%v", err)
		}
		if len(offs) == 0 {
			return bad("file %s holds no offsets", rest)
		}
		a.kind, a.offsets, a.n = "list", offs, len(offs)
		return a, nil
	default:
		return bad("unknown kind %q (want flash, steady, ramp or csv)", kind)
	}
	count, over, ok := strings.Cut(rest, "@")
	if !ok {
		return bad("missing @D after %q (want %s:N@D)", count, kind)
	}
	d, err := time.ParseDuration(over)
	if err != nil || d < 0 {
		return bad("bad duration %q (want a duration such as 10s)", over)
	}
	a.over = d
	if kind == "steady" && (strings.HasSuffix(count, "/s") || strings.HasSuffix(count, "/m")) {
		r, err := strconv.ParseFloat(count[:len(count)-2], 64)
		if err != nil || r <= 0 || math.IsInf(r, 0) || math.IsNaN(r) {
			return bad("bad rate %q (want visitors per second above zero, such as 20/s)", count)
		}
		if strings.HasSuffix(count, "/m") {
			r /= 60
		}
		n := math.Floor(r*d.Seconds() + 1e-9)
		if n < 1 || n > 1e8 {
			return bad("rate %s over %s makes %.0f visitors (want 1 to 100000000)", count, over, n)
		}
		a.rate, a.n = r, int(n)
		return a, nil
	}
	n, err := strconv.Atoi(count)
	if err != nil || n < 1 || n > 1e8 {
		return bad("bad visitor count %q (want a whole number from 1 to 100000000)", count)
	}
	a.n = n
	return a, nil
}

// ArrivalsAt returns the arrival curve with exactly these offsets.
func ArrivalsAt(offsets ...time.Duration) Arrivals {
	offs := slices.Clone(offsets)
	slices.Sort(offs)
	return Arrivals{spec: "list", kind: "list", n: len(offs), offsets: offs}
}

// Len is the number of visitors.
func (a Arrivals) Len() int { return a.n }

// String is the spec the curve was parsed from.
func (a Arrivals) String() string { return a.spec }

// Offsets returns every visitor's arrival offset, in increasing order. Only
// flash draws at random; the same seed gives the same offsets.
func (a Arrivals) Offsets(seed uint64) []time.Duration {
	out := make([]time.Duration, a.n)
	switch a.kind {
	case "list":
		copy(out, a.offsets)
	case "flash":
		r := rand.New(rand.NewPCG(seed, 0xa441_7a15))
		for i := range out {
			out[i] = time.Duration(r.Int64N(int64(a.over) + 1))
		}
		slices.Sort(out)
	case "steady":
		for i := range out {
			if a.rate > 0 {
				out[i] = time.Duration(float64(i) / a.rate * float64(time.Second))
			} else {
				out[i] = a.over * time.Duration(i) / time.Duration(a.n)
			}
		}
	case "ramp":
		// The cumulative count grows as (t/D)^2: visitor i arrives when
		// i of the n have arrived.
		for i := range out {
			out[i] = time.Duration(float64(a.over) * math.Sqrt(float64(i)/float64(a.n)))
		}
	}
	return out
}

// readOffsets reads a csv:FILE file.
func readOffsets(name string) ([]time.Duration, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	defer f.Close()
	var out []time.Duration
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		field, _, _ := strings.Cut(text, ",")
		field = strings.TrimSpace(field)
		sec, err := strconv.ParseFloat(field, 64)
		if err != nil || sec < 0 || math.IsInf(sec, 0) || math.IsNaN(sec) || sec > 1e9 {
			return nil, fmt.Errorf("%s line %d: bad offset %q (want seconds, zero or more)", name, line, field)
		}
		out = append(out, time.Duration(sec*float64(time.Second)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	slices.Sort(out)
	return out, nil
}
