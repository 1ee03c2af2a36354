package bench

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

type distKind uint8

const (
	distFixed distKind = iota
	distUniform
	distExp
)

// Dist is a distribution of durations, written as a string:
//
//	10s        always 10 s (any Go duration; "0" is zero)
//	5s-20s     uniform between 5 s and 20 s, both included
//	exp:30s    exponential with a mean of 30 s (not capped)
//
// The zero Dist is always zero. Dist implements encoding.TextMarshaler and
// encoding.TextUnmarshaler, so it works as a flag value or in JSON.
type Dist struct {
	kind distKind
	a, b time.Duration // fixed: a; uniform: a to b; exp: mean a
}

// Fixed returns the distribution that is always d.
func Fixed(d time.Duration) Dist { return Dist{kind: distFixed, a: d} }

// Uniform returns the uniform distribution between lo and hi.
func Uniform(lo, hi time.Duration) Dist { return Dist{kind: distUniform, a: lo, b: hi} }

// Exp returns the exponential distribution with the given mean.
func Exp(mean time.Duration) Dist { return Dist{kind: distExp, a: mean} }

// ParseDist parses a distribution written as Dist documents.
func ParseDist(s string) (Dist, error) {
	in := strings.TrimSpace(s)
	bad := func(format string, args ...any) (Dist, error) {
		return Dist{}, fmt.Errorf("distribution %q: %s", s, fmt.Sprintf(format, args...))
	}
	if in == "" {
		return bad("empty")
	}
	if rest, ok := strings.CutPrefix(in, "exp:"); ok {
		mean, err := time.ParseDuration(rest)
		if err != nil {
			return bad("bad mean %q (want a duration such as 30s)", rest)
		}
		if mean <= 0 {
			return bad("mean %s must be above zero", rest)
		}
		return Exp(mean), nil
	}
	if strings.HasPrefix(in, "-") {
		return bad("negative duration")
	}
	if lo, hi, ok := strings.Cut(in, "-"); ok {
		a, err := time.ParseDuration(lo)
		if err != nil {
			return bad("bad lower bound %q (want a duration such as 5s)", lo)
		}
		b, err := time.ParseDuration(hi)
		if err != nil {
			return bad("bad upper bound %q (want a duration such as 20s)", hi)
		}
		if a > b {
			return bad("lower bound %s is above upper bound %s", lo, hi)
		}
		return Uniform(a, b), nil
	}
	if strings.Contains(in, ":") {
		kind, _, _ := strings.Cut(in, ":")
		return bad("unknown kind %q (want exp, or a duration, or lo-hi)", kind)
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return bad("bad duration (want 10s, 5s-20s or exp:30s)")
	}
	return Fixed(d), nil
}

// MustDist is ParseDist for constant strings: it panics on an error.
func MustDist(s string) Dist {
	d, err := ParseDist(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Sample draws one duration from d with r. It never returns less than zero.
func (d Dist) Sample(r *rand.Rand) time.Duration {
	switch d.kind {
	case distUniform:
		if d.b <= d.a {
			return max(d.a, 0)
		}
		return max(d.a+time.Duration(r.Int64N(int64(d.b-d.a)+1)), 0)
	case distExp:
		return max(time.Duration(r.ExpFloat64()*float64(d.a)), 0)
	}
	return max(d.a, 0)
}

// fixed reports whether every sample is the same.
func (d Dist) fixed() bool { return d.kind == distFixed || (d.kind == distUniform && d.b <= d.a) }

// Mean is the distribution's mean.
func (d Dist) Mean() time.Duration {
	if d.kind == distUniform {
		return d.a + (d.b-d.a)/2
	}
	return d.a
}

// IsZero reports whether d is always zero.
func (d Dist) IsZero() bool { return d.kind == distFixed && d.a == 0 }

// String writes d as ParseDist reads it.
func (d Dist) String() string {
	switch d.kind {
	case distUniform:
		return d.a.String() + "-" + d.b.String()
	case distExp:
		return "exp:" + d.a.String()
	}
	return d.a.String()
}

// MarshalText implements encoding.TextMarshaler.
func (d Dist) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Dist) UnmarshalText(b []byte) error {
	v, err := ParseDist(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}
