package analytics

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBucketsCoverValues: every value falls in the bucket whose range holds
// it, buckets are contiguous, and a bucket is at most 1/8 of its values
// wide (so its midpoint is within 1/16 of any of them).
func TestBucketsCoverValues(t *testing.T) {
	var next uint64
	for i := range Buckets {
		lo, hi := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if hi < lo || (lo >= linearMax && float64(hi-lo+1) > float64(lo)/subBuckets) {
			t.Fatalf("bucket %d: [%d, %d] too wide", i, lo, hi)
		}
		for _, v := range []uint64{lo, hi, (lo + hi) / 2} {
			if b := bucketOf(v); b != i {
				t.Fatalf("bucketOf(%d) = %d, want %d", v, b, i)
			}
		}
		next = hi + 1
	}
	if next-1 != MaxValue {
		t.Fatalf("last bucket ends at %d, want MaxValue %d", next-1, uint64(MaxValue))
	}
	if b := bucketOf(math.MaxUint64); b != Buckets-1 {
		t.Errorf("a huge value is in bucket %d, want the last", b)
	}
}

// TestQuantilesWithinBucketError: quantiles of random waits (log-uniform,
// 1 ms to a day) are within 1/16 of the exact ones; merging two halves
// gives the histogram of the whole.
func TestQuantilesWithinBucketError(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var all, a, b Hist
	var vals []int64
	for i := range 20000 {
		v := int64(math.Exp(r.Float64() * math.Log(86_400_000)))
		vals = append(vals, v)
		all.Record(v)
		if i%2 == 0 {
			a.Record(v)
		} else {
			b.Record(v)
		}
	}
	slices.Sort(vals)
	a.Merge(&b)
	if a != all {
		t.Fatal("merged halves differ from the whole")
	}
	for _, q := range []float64{0.5, 0.75, 0.9, 0.95, 0.99} {
		exact := float64(vals[int(math.Ceil(q*float64(len(vals))))-1])
		got := all.Quantile(q)
		if math.Abs(got-exact) > exact/16+1 {
			t.Errorf("q%v = %v, exact %v: off by more than 1/16", q, got, exact)
		}
	}
	var empty Hist
	if empty.Quantile(0.5) != 0 || empty.Count() != 0 {
		t.Error("empty histogram has values")
	}
}

// TestRecordAllocatesNothing: recording is a bucket increment.
func TestRecordAllocatesNothing(t *testing.T) {
	var h Hist
	if n := testing.AllocsPerRun(1000, func() { h.Record(12345) }); n != 0 {
		t.Errorf("Record allocates %v", n)
	}
	h.Record(-5)
	if h.Quantile(0.0001) != 0 {
		t.Error("a negative value did not count as 0")
	}
}
