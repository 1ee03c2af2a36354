package guard

import (
	"context"
	"crypto/sha256"
	"runtime"
	"sort"
	"strconv"
	"sync"
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

// TestNativeSolveTime measures the native solver at the default difficulty
// (go test -run TestNativeSolveTime -v): the figure docs/pow.md compares
// with the browser's.
func TestNativeSolveTime(t *testing.T) {
	p := MustPoW(t, "k1")
	const runs = 20
	times := make([]time.Duration, 0, runs)
	var attempts uint64
	for range runs {
		c := MustIssue(t, p, DefaultDifficulty)
		start := time.Now()
		n := MustSolve(t, c.Value, DefaultDifficulty)
		times = append(times, time.Since(start))
		v, _ := strconv.ParseUint(n, 10, 64)
		attempts += v + 1
	}
	var total time.Duration
	for _, d := range times {
		total += d
	}
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	perHash := float64(total.Nanoseconds()) / float64(attempts)
	t.Logf("native Go solver, difficulty %d, %d runs on one core: median %v, max %v, mean %v; %.0f ns/hash (%.1f M hashes/s), 2^16 attempts in %.1f ms",
		DefaultDifficulty, runs, times[runs/2].Round(time.Millisecond), times[runs-1].Round(time.Millisecond),
		(total / runs).Round(time.Millisecond), perHash, 1e3/perHash, perHash*65536/1e6)
	// All cores at once: what one attacker's machine does.
	var wg sync.WaitGroup
	start := time.Now()
	per := 4
	for range runtime.NumCPU() {
		wg.Go(func() {
			for range per {
				c := MustIssue(t, p, DefaultDifficulty)
				MustSolve(t, c.Value, DefaultDifficulty)
			}
		})
	}
	wg.Wait()
	solves := per * runtime.NumCPU()
	t.Logf("native Go solver on %d cores: %d solves in %v, %.1f solves/s",
		runtime.NumCPU(), solves, time.Since(start).Round(time.Millisecond), float64(solves)/time.Since(start).Seconds())
}
