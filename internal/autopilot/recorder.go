package autopilot

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// Buckets is the number of latency buckets of a Recorder: eight a power
// of two of microseconds (each at most 12.5 % wide), from 1 us to 67 s.
const Buckets = 27 * 8

// The store carries exactly the buckets of a Recorder.
const _ = uint(usher.HealthBuckets-Buckets) + uint(Buckets-usher.HealthBuckets)

// Recorder counts an origin's responses (or probes), their failures and
// their latencies in fixed buckets: cumulative atomic counters, so that
// recording allocates nothing and takes no lock; a reader takes the
// difference of two Snapshots. The zero value is ready.
type Recorder struct {
	count, errors atomic.Int64
	buckets       [Buckets]atomic.Int64
}

// Record counts one response that took d; failed is a 5xx answer, a
// timeout or no answer.
func (r *Recorder) Record(d time.Duration, failed bool) {
	r.count.Add(1)
	if failed {
		r.errors.Add(1)
	}
	r.buckets[bucketOf(d)].Add(1)
}

// Snapshot is a Recorder's counts at a moment, or the difference of two.
type Snapshot struct {
	Count, Errors int64
	Buckets       [Buckets]int64
}

// Snapshot returns the counts so far.
func (r *Recorder) Snapshot() Snapshot {
	var s Snapshot
	s.Count, s.Errors = r.count.Load(), r.errors.Load()
	for i := range s.Buckets {
		s.Buckets[i] = r.buckets[i].Load()
	}
	return s
}

// Sub returns the counts of s since prev.
func (s *Snapshot) Sub(prev *Snapshot) Snapshot {
	d := Snapshot{Count: s.Count - prev.Count, Errors: s.Errors - prev.Errors}
	for i := range d.Buckets {
		d.Buckets[i] = s.Buckets[i] - prev.Buckets[i]
	}
	return d
}

// Add adds o's counts to s.
func (s *Snapshot) Add(o *Snapshot) {
	s.Count += o.Count
	s.Errors += o.Errors
	for i := range s.Buckets {
		s.Buckets[i] += o.Buckets[i]
	}
}

// Percentile returns the p-th percentile (0 < p <= 100) of the latencies
// counted, as the upper bound of its bucket; 0 when none were.
func (s *Snapshot) Percentile(p float64) time.Duration {
	var n int64
	for _, c := range s.Buckets {
		n += c
	}
	if n == 0 {
		return 0
	}
	return s.atRank(max(int64(float64(n)*p/100+0.999999), 1))
}

// atRank returns the upper bound of the bucket of the rank-th latency
// (from 1, the fastest).
func (s *Snapshot) atRank(rank int64) time.Duration {
	var seen int64
	for i, c := range s.Buckets {
		seen += c
		if seen >= rank {
			return bucketUpper(i)
		}
	}
	return bucketUpper(Buckets - 1)
}

// SamplePercentile is Percentile as a governor's sample takes it: when
// the answers are too few for the p-th percentile to leave any out (the
// p99 of fewer than 100), their slowest one is left out (of two or
// more). The p99 of a second with 20 answers is otherwise its slowest
// one, and a single slow answer (a machine busy for a moment) would make
// a degraded second; a degradation slows many answers, and still shows.
func (s *Snapshot) SamplePercentile(p float64) time.Duration {
	var n int64
	for _, c := range s.Buckets {
		n += c
	}
	if n == 0 {
		return 0
	}
	rank := max(int64(float64(n)*p/100+0.999999), 1)
	if n >= 2 && rank >= n {
		rank = n - 1
	}
	return s.atRank(rank)
}

// bucketOf returns the bucket of d.
func bucketOf(d time.Duration) int {
	us := uint64(max(d.Microseconds(), 0))
	if us < 8 {
		return int(us)
	}
	n := bits.Len64(us)
	if n > 27 {
		return Buckets - 1
	}
	return (n-1)*8 + int((us>>(n-4))&7)
}

// bucketUpper returns the upper bound of bucket i.
func bucketUpper(i int) time.Duration {
	if i < 24 { // 8..23 are unused: 8 to 15 us fall in 24..31
		return time.Duration(i+1) * time.Microsecond
	}
	n, sub := i/8+1, i%8
	return time.Duration(uint64(9+sub)<<(n-4)) * time.Microsecond
}
