package autopilot

import (
	"testing"
	"time"
)

func TestBuckets(t *testing.T) {
	prev := time.Duration(0)
	for i := range Buckets {
		if i >= 8 && i < 24 {
			continue // unused: 8..15 us fall in buckets 24..31
		}
		u := bucketUpper(i)
		if u <= prev {
			t.Fatalf("bucket %d upper %v not above the previous %v", i, u, prev)
		}
		prev = u
	}
	for _, d := range []time.Duration{0, time.Microsecond, 5 * time.Microsecond, 999 * time.Microsecond, 7 * time.Millisecond,
		123 * time.Millisecond, 3 * time.Second, 60 * time.Second} {
		b := bucketOf(d)
		if up := bucketUpper(b); up < d || (d >= 10*time.Microsecond && float64(up) > float64(d)*1.126) {
			t.Errorf("%v in bucket %d whose upper bound is %v: want within 12.6 %% above", d, b, up)
		}
	}
	if b := bucketOf(time.Hour); b != Buckets-1 {
		t.Errorf("an hour in bucket %d, want the last", b)
	}
}

func TestRecorderPercentiles(t *testing.T) {
	var r Recorder
	before := r.Snapshot()
	for i := 1; i <= 1000; i++ {
		r.Record(time.Duration(i)*time.Millisecond, i%100 == 0)
	}
	now := r.Snapshot()
	d := now.Sub(&before)
	if d.Count != 1000 || d.Errors != 10 {
		t.Fatalf("count %d errors %d, want 1000 and 10", d.Count, d.Errors)
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 500 * time.Millisecond}, {99, 990 * time.Millisecond}} {
		got := d.Percentile(tc.p)
		if got < tc.want || float64(got) > float64(tc.want)*1.126 {
			t.Errorf("p%v = %v, want %v to 12.6 %% above", tc.p, got, tc.want)
		}
	}
	var empty Snapshot
	if empty.Percentile(99) != 0 {
		t.Error("percentile of nothing is not 0")
	}
}

func TestRecordAllocatesNothing(t *testing.T) {
	var r Recorder
	if n := testing.AllocsPerRun(1000, func() { r.Record(42*time.Millisecond, false) }); n != 0 {
		t.Errorf("Record allocates %v times", n)
	}
}

func BenchmarkRecord(b *testing.B) {
	var r Recorder
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Record(42*time.Millisecond, false)
		}
	})
}
