package analytics

import (
	"math"
	"math/bits"
	"time"

	"github.com/usherhq/usher"
)

// Hist is a log-linear histogram of non-negative integer values (HDR's
// layout with one significant binary digit in three): values below
// linearMax each have their own bucket, and every further power of two is
// cut into subBuckets equal buckets, so a value is known within 1/16 of
// itself (a percentile is reported at its bucket's midpoint: within about
// 3 %). Values above MaxValue count in the last bucket. Two histograms
// merge by adding their buckets, so counts kept apart (per node, per
// minute) add up to the histogram of all the values.
//
// The zero value is empty and ready to use; a Hist is a fixed-size array,
// so recording allocates nothing.
type Hist struct {
	c [Buckets]uint32
	n uint64
}

const (
	subBits    = 3
	subBuckets = 1 << subBits // buckets per power of two past linearMax
	linearBits = subBits + 1
	linearMax  = 1 << linearBits // values 0..linearMax-1 have a bucket each
	maxBits    = 32
	// MaxValue is the largest value told apart; larger values count as it.
	MaxValue = 1<<maxBits - 1
	// Buckets is the number of buckets of a Hist.
	Buckets = linearMax + (maxBits-linearBits)*subBuckets
)

// bucketOf returns the bucket of v.
func bucketOf(v uint64) int {
	if v < linearMax {
		return int(v)
	}
	if v > MaxValue {
		v = MaxValue
	}
	e := bits.Len64(v) - 1 // v in [2^e, 2^(e+1)), e >= linearBits
	sub := int(v>>(e-subBits)) & (subBuckets - 1)
	return linearMax + (e-linearBits)*subBuckets + sub
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < linearMax {
		return uint64(i), uint64(i)
	}
	e := (i-linearMax)/subBuckets + linearBits
	sub := uint64((i - linearMax) % subBuckets)
	width := uint64(1) << (e - subBits)
	lo = uint64(1)<<e + sub*width
	return lo, lo + width - 1
}

// Record counts one value (negative values count as 0).
func (h *Hist) Record(v int64) {
	if v < 0 {
		v = 0
	}
	i := bucketOf(uint64(v))
	if h.c[i] < math.MaxUint32 {
		h.c[i]++
	}
	h.n++
}

// Count returns the number of values recorded.
func (h *Hist) Count() uint64 { return h.n }

// AddBucket adds n values to bucket i (merging a histogram read from the
// store); an i out of range is ignored.
func (h *Hist) AddBucket(i int, n uint64) {
	if i < 0 || i >= Buckets || n == 0 {
		return
	}
	h.c[i] = uint32(min(uint64(h.c[i])+n, math.MaxUint32))
	h.n += n
}

// Merge adds o's values to h.
func (h *Hist) Merge(o *Hist) {
	for i, c := range o.c {
		if c != 0 {
			h.AddBucket(i, uint64(c))
		}
	}
}

// Each calls fn for every bucket that holds values.
func (h *Hist) Each(fn func(i int, n uint64)) {
	for i, c := range h.c {
		if c != 0 {
			fn(i, uint64(c))
		}
	}
}

// Quantile returns the value at quantile q (0 < q <= 1): the midpoint of
// the bucket that holds it; 0 for an empty histogram.
func (h *Hist) Quantile(q float64) float64 {
	var total uint64
	for _, c := range h.c {
		total += uint64(c)
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.c {
		seen += uint64(c)
		if seen >= rank {
			lo, hi := bucketRange(i)
			return float64(lo+hi) / 2
		}
	}
	lo, hi := bucketRange(Buckets - 1)
	return float64(lo+hi) / 2
}

// Storage bounds. A point holds at most PointFields fields: four counts,
// three peaks and every bucket of the three histograms. Each field is a
// length byte, a name of at most four bytes and a value of at most 10
// bytes (a uvarint), so a point takes at most MaxPointBytes in the local
// store (Redis keeps the same fields in a hash, with its own per-field
// overhead). A room keeps at most AnalyticsMinuteKeep of minute points and
// AnalyticsHourKeep of hour points, plus the steps under way: RoomBytes
// (about 23.6 MB) bounds a room's analytics. That is the worst case, every
// bucket of every histogram filled in every minute for a day; a real
// minute fills a few dozen buckets of each.
const (
	PointFields   = 4 + 4 + 3*Buckets
	MaxPointBytes = PointFields * (1 + 4 + 10)
	RoomBytes     = (int(usher.AnalyticsMinuteKeep/time.Minute) + int(usher.AnalyticsHourKeep/time.Hour) + 4) * MaxPointBytes
)
