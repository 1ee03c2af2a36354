package local

import (
	"math/rand/v2"
	"testing"
)

func TestCountsMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var c counts
	naive := map[int64]int64{}
	for i := range 20000 {
		b := 1_700_000_000 + rng.Int64N(3000) + int64(i/10)
		if i%7 == 0 {
			b = 1_577_836_800 + rng.Int64N(31_000_000_000) // anywhere in range
		}
		d := rng.Int64N(5) - 1
		c.add(b, d)
		naive[b] += d
		q := 1_700_000_000 + rng.Int64N(5000)
		if i%5 == 0 {
			q = 1_577_836_800 + rng.Int64N(31_000_000_000)
		}
		var want, total int64
		for k, v := range naive {
			total += v
			if k < q {
				want += v
			}
		}
		if got := c.before(q); got != want {
			t.Fatalf("step %d: before(%d) = %d, want %d", i, q, got, want)
		}
		if c.total != total {
			t.Fatalf("step %d: total = %d, want %d", i, c.total, total)
		}
		if got := c.get(b); got != naive[b] {
			t.Fatalf("step %d: get(%d) = %d, want %d", i, b, got, naive[b])
		}
	}
}

// TestCountsSparse checks that memory follows the buckets in use: 50
// waiters spread over a month of seconds hold a few hundred pages, and
// emptied pages are dropped.
func TestCountsSparse(t *testing.T) {
	var c counts
	rng := rand.New(rand.NewPCG(3, 4))
	start := int64(1_800_000_000)
	var bs []int64
	for range 50 {
		b := start + rng.Int64N(31*24*3600)
		bs = append(bs, b)
		c.add(b, 1)
	}
	if n := c.pages(); n > 50*levels {
		t.Fatalf("%d pages for 50 waiters, want at most %d", n, 50*levels)
	}
	for _, b := range bs {
		c.add(b, -1)
	}
	if n := c.pages(); n != 0 || c.total != 0 {
		t.Fatalf("after every waiter left: %d pages, total %d; want none", n, c.total)
	}
}

func BenchmarkCountsBefore(b *testing.B) {
	var c counts
	for i := range int64(10000) {
		c.add(1_800_000_000+i/5, 1)
	}
	b.ResetTimer()
	for i := range b.N {
		_ = c.before(1_800_000_000 + int64(i%2000))
	}
}
