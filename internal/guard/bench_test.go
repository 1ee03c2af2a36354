package guard

import (
	"context"
	"crypto/sha256"
	"slices"
	"strconv"
	"testing"
	"time"
)

func BenchmarkIssue(b *testing.B) {
	p := MustPoW(b, "k1")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Issue(testRoom, testClient, DefaultDifficulty, t0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	p := MustPoW(b, "k2", "k1")
	c := MustIssue(b, p, 12)
	n := MustSolve(b, c.Value, 12)
	b.Run("good", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Verify(c.Value, n, testRoom, testClient, 12, t0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("forged", func(b *testing.B) {
		bad := c.Value[:len(c.Value)-2] + "AA"
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.Verify(bad, n, testRoom, testClient, 12, t0); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkMemorySpent(b *testing.B) {
	s := NewMemorySpent(0)
	until := time.Now().Add(time.Hour)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if _, err := s.Spend(context.Background(), testRoom, id(i), until); err != nil {
			// full: start again
			s = NewMemorySpent(0)
		}
	}
}

// BenchmarkHash is one attempt of the native solver (ns per hash on one
// core), and for comparison the floor of Go's crypto/sha256: one hash of a
// one-block message, what an attempt costs a solver that keeps the
// challenge's midstate without Solve's state copying.
func BenchmarkHash(b *testing.B) {
	c := MustIssue(b, MustPoW(b, "k1"), MaxDifficulty)
	b.Run("solver", func(b *testing.B) {
		if _, found, err := solve(context.Background(), c.Value, MaxDifficulty, uint64(b.N)); err != nil || found {
			b.Log("solved at difficulty 32: a 2^-32 chance per attempt")
		}
	})
	b.Run("sum256-one-block", func(b *testing.B) {
		msg := []byte(c.Value + ":1234567")[64:]
		var sink byte
		for b.Loop() {
			s := sha256.Sum256(msg)
			sink ^= s[0]
		}
		_ = sink
	})
}

// BenchmarkSolveDefault solves challenges of the default difficulty with
// the native solver on one core: ns/op is the mean solve time, and the
// median and the slowest are reported too, the figures docs/pow.md compares
// with the browser's:
//
//	go test ./internal/guard -run '^$' -bench SolveDefault -benchtime 40x
func BenchmarkSolveDefault(b *testing.B) {
	p := MustPoW(b, "k1")
	var times []time.Duration
	var attempts uint64
	for b.Loop() {
		b.StopTimer()
		c := MustIssue(b, p, DefaultDifficulty)
		b.StartTimer()
		start := time.Now()
		n := MustSolve(b, c.Value, DefaultDifficulty)
		times = append(times, time.Since(start))
		v, _ := strconv.ParseUint(n, 10, 64)
		attempts += v + 1
	}
	var total time.Duration
	for _, d := range times {
		total += d
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1e3, "median-ms")
	b.ReportMetric(float64(times[len(times)-1].Microseconds())/1e3, "max-ms")
	b.ReportMetric(float64(total.Nanoseconds())/float64(attempts), "ns/hash")
}
