package bench

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
	"time"
)

func TestParseDist(t *testing.T) {
	good := []struct {
		in   string
		want Dist
		str  string
	}{
		{"10s", Fixed(10 * time.Second), "10s"},
		{" 1m30s ", Fixed(90 * time.Second), "1m30s"},
		{"0", Fixed(0), "0s"},
		{"5s-20s", Uniform(5*time.Second, 20*time.Second), "5s-20s"},
		{"1s-1s", Uniform(time.Second, time.Second), "1s-1s"},
		{"exp:30s", Exp(30 * time.Second), "exp:30s"},
	}
	for _, c := range good {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseDist(c.in)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || got.String() != c.str {
				t.Errorf("ParseDist(%q) = %v, want %v", c.in, got, c.want)
			}
			if back, err := ParseDist(got.String()); err != nil || back != got {
				t.Errorf("round trip of %v = %v, %v", got, back, err)
			}
		})
	}
	bad := []struct{ in, err string }{
		{"", `distribution "": empty`},
		{"soon", `distribution "soon": bad duration (want 10s, 5s-20s or exp:30s)`},
		{"10", `distribution "10": bad duration (want 10s, 5s-20s or exp:30s)`},
		{"-5s", `distribution "-5s": negative duration`},
		{"5s-", `distribution "5s-": bad upper bound "" (want a duration such as 20s)`},
		{"x-5s", `distribution "x-5s": bad lower bound "x" (want a duration such as 5s)`},
		{"20s-5s", `distribution "20s-5s": lower bound 20s is above upper bound 5s`},
		{"exp:", `distribution "exp:": bad mean "" (want a duration such as 30s)`},
		{"exp:0s", `distribution "exp:0s": mean 0s must be above zero`},
		{"norm:5s", `distribution "norm:5s": unknown kind "norm" (want exp, or a duration, or lo-hi)`},
	}
	for _, c := range bad {
		t.Run("bad "+c.in, func(t *testing.T) {
			_, err := ParseDist(c.in)
			if err == nil || err.Error() != c.err {
				t.Errorf("ParseDist(%q) error = %v, want %s", c.in, err, c.err)
			}
		})
	}
}

func TestDistSample(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	if got := Fixed(3 * time.Second).Sample(r); got != 3*time.Second {
		t.Errorf("fixed sample = %v", got)
	}
	if got := (Dist{}).Sample(r); got != 0 {
		t.Errorf("zero Dist sample = %v", got)
	}
	u := Uniform(5*time.Second, 20*time.Second)
	var sum time.Duration
	const n = 20000
	for range n {
		d := u.Sample(r)
		if d < 5*time.Second || d > 20*time.Second {
			t.Fatalf("uniform sample %v out of range", d)
		}
		sum += d
	}
	if mean := sum / n; mean < 12*time.Second || mean > 13*time.Second {
		t.Errorf("uniform mean = %v, want about 12.5s", mean)
	}
	e := Exp(30 * time.Second)
	sum = 0
	for range n {
		d := e.Sample(r)
		if d < 0 {
			t.Fatalf("negative exp sample %v", d)
		}
		sum += d
	}
	if mean := sum / n; mean < 28*time.Second || mean > 32*time.Second {
		t.Errorf("exp mean = %v, want about 30s", mean)
	}
	if u.Mean() != 12500*time.Millisecond || e.Mean() != 30*time.Second {
		t.Errorf("Mean = %v, %v", u.Mean(), e.Mean())
	}
}

func TestDistJSON(t *testing.T) {
	var m struct{ Browse, Patience Dist }
	if err := json.Unmarshal([]byte(`{"Browse":"5s-20s","Patience":"exp:1m0s"}`), &m); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"Browse":"5s-20s","Patience":"exp:1m0s"}` {
		t.Errorf("JSON = %s", b)
	}
	if err := json.Unmarshal([]byte(`{"Browse":"later"}`), &m); err == nil {
		t.Error("bad distribution in JSON accepted")
	}
}
