package bench

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseArrivals(t *testing.T) {
	ms := time.Millisecond
	good := []struct {
		spec string
		want []time.Duration
	}{
		{"steady:4@2s", []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms}},
		{"steady:5/s@1s", []time.Duration{0, 200 * ms, 400 * ms, 600 * ms, 800 * ms}},
		{"steady:2.5/s@2s", []time.Duration{0, 400 * ms, 800 * ms, 1200 * ms, 1600 * ms}},
		{"steady:120/m@2s", []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms}},
		{"steady:3@0s", []time.Duration{0, 0, 0}},
		// The cumulative count grows as (t/D)^2: 2s*sqrt(i/4).
		{"ramp:4@2s", []time.Duration{0, 1000 * ms, 1414213562, 1732050807}},
		{"flash:3@0s", []time.Duration{0, 0, 0}},
	}
	for _, c := range good {
		t.Run(c.spec, func(t *testing.T) {
			a, err := ParseArrivals(c.spec)
			if err != nil {
				t.Fatal(err)
			}
			if a.Len() != len(c.want) || a.String() != c.spec {
				t.Errorf("Len = %d, String = %q", a.Len(), a.String())
			}
			if got := a.Offsets(7); !slices.Equal(got, c.want) {
				t.Errorf("Offsets = %v, want %v", got, c.want)
			}
		})
	}

	bad := []struct{ spec, err string }{
		{"", `arrivals "": want flash:N@D, steady:R/s@D, steady:N@D, ramp:N@D or csv:FILE`},
		{"flash", `arrivals "flash": want flash:N@D, steady:R/s@D, steady:N@D, ramp:N@D or csv:FILE`},
		{"wave:10@1s", `arrivals "wave:10@1s": unknown kind "wave" (want flash, steady, ramp or csv)`},
		{"flash:10", `arrivals "flash:10": missing @D after "10" (want flash:N@D)`},
		{"flash:abc@10s", `arrivals "flash:abc@10s": bad visitor count "abc" (want a whole number from 1 to 100000000)`},
		{"flash:0@10s", `arrivals "flash:0@10s": bad visitor count "0" (want a whole number from 1 to 100000000)`},
		{"ramp:10@soon", `arrivals "ramp:10@soon": bad duration "soon" (want a duration such as 10s)`},
		{"ramp:10@-1s", `arrivals "ramp:10@-1s": bad duration "-1s" (want a duration such as 10s)`},
		{"steady:x/s@1s", `arrivals "steady:x/s@1s": bad rate "x/s" (want visitors per second above zero, such as 20/s)`},
		{"steady:0/s@1s", `arrivals "steady:0/s@1s": bad rate "0/s" (want visitors per second above zero, such as 20/s)`},
		{"steady:1/s@500ms", `arrivals "steady:1/s@500ms": rate 1/s over 500ms makes 0 visitors (want 1 to 100000000)`},
		{"flash:5/s@1s", `arrivals "flash:5/s@1s": bad visitor count "5/s" (want a whole number from 1 to 100000000)`},
	}
	for _, c := range bad {
		t.Run("bad "+c.spec, func(t *testing.T) {
			_, err := ParseArrivals(c.spec)
			if err == nil || err.Error() != c.err {
				t.Errorf("error = %v\nwant    %s", err, c.err)
			}
		})
	}
}

func TestFlashArrivals(t *testing.T) {
	a, err := ParseArrivals("flash:1000@10s")
	if err != nil {
		t.Fatal(err)
	}
	offs := a.Offsets(1)
	if len(offs) != 1000 || !slices.IsSorted(offs) {
		t.Fatalf("got %d offsets, sorted %v", len(offs), slices.IsSorted(offs))
	}
	if offs[0] < 0 || offs[999] > 10*time.Second {
		t.Errorf("offsets from %v to %v, want within [0, 10s]", offs[0], offs[999])
	}
	// Uniform: about a tenth in each second.
	var first int
	for _, o := range offs {
		if o < time.Second {
			first++
		}
	}
	if first < 60 || first > 140 {
		t.Errorf("%d of 1000 in the first second, want about 100", first)
	}
	if !slices.Equal(offs, a.Offsets(1)) {
		t.Error("same seed, different offsets")
	}
	if slices.Equal(offs, a.Offsets(2)) {
		t.Error("different seeds, same offsets")
	}
}

func TestCSVArrivals(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.csv")
	if err := os.WriteFile(good, []byte("# offsets\n2.5\n\n0\n1,extra field\n 0.25 \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := ParseArrivals("csv:" + good)
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 250 * time.Millisecond, time.Second, 2500 * time.Millisecond}
	if got := a.Offsets(0); !slices.Equal(got, want) {
		t.Errorf("Offsets = %v, want %v", got, want)
	}

	bad := filepath.Join(dir, "bad.csv")
	if err := os.WriteFile(bad, []byte("1\n2\nsoon\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.csv")
	if err := os.WriteFile(empty, []byte("# nothing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ spec, err string }{
		{"csv:" + bad, `arrivals "csv:` + bad + `": ` + bad + ` line 3: bad offset "soon" (want seconds, zero or more)`},
		{"csv:" + empty, `arrivals "csv:` + empty + `": file ` + empty + ` holds no offsets`},
		{"csv:" + filepath.Join(dir, "missing.csv"), `arrivals "csv:` + filepath.Join(dir, "missing.csv") + `": open `},
	} {
		_, err := ParseArrivals(c.spec)
		if err == nil || !strings.HasPrefix(err.Error(), c.err) {
			t.Errorf("ParseArrivals(%q) error = %v, want %s", c.spec, err, c.err)
		}
	}
	if err := os.WriteFile(bad, []byte("-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ParseArrivals("csv:" + bad); err == nil || !strings.Contains(err.Error(), `line 1: bad offset "-1"`) {
		t.Errorf("negative offset: %v", err)
	}
}

func TestArrivalsAt(t *testing.T) {
	a := ArrivalsAt(2*time.Second, 0, time.Second)
	if a.Len() != 3 || !slices.Equal(a.Offsets(0), []time.Duration{0, time.Second, 2 * time.Second}) {
		t.Errorf("ArrivalsAt = %v", a.Offsets(0))
	}
}
