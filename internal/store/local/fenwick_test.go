package local

import (
	"math/rand/v2"
	"testing"
)

func TestFenwickMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var f fenwick
	naive := map[int64]int64{}
	for i := range 20000 {
		b := 1_700_000_000 + rng.Int64N(3000) + int64(i/10)
		d := rng.Int64N(5) - 1
		f.add(b, d)
		naive[b] += d
		q := 1_700_000_000 + rng.Int64N(5000)
		var want, total int64
		for k, v := range naive {
			total += v
			if k < q {
				want += v
			}
		}
		if got := f.before(q); got != want {
			t.Fatalf("step %d: before(%d) = %d, want %d", i, q, got, want)
		}
		if f.total != total {
			t.Fatalf("step %d: total = %d, want %d", i, f.total, total)
		}
		if got := f.get(b); got != naive[b] {
			t.Fatalf("step %d: get(%d) = %d, want %d", i, b, got, naive[b])
		}
	}
}
