package local

// fenwick is a Fenwick (binary indexed) tree of per-bucket counts over a
// window of consecutive buckets, growing as buckets outside it appear. It
// answers "how many before bucket b" in O(log n).
type fenwick struct {
	base  int64   // bucket of index 0
	vals  []int64 // the counts
	tree  []int64 // 1-based Fenwick sums over vals
	total int64
}

// add adds d to bucket b.
func (f *fenwick) add(b, d int64) {
	if d == 0 {
		return
	}
	f.fit(b)
	i := int(b - f.base)
	f.vals[i] += d
	f.total += d
	for j := i + 1; j <= len(f.tree); j += j & -j {
		f.tree[j-1] += d
	}
}

// before returns the sum of buckets strictly before b.
func (f *fenwick) before(b int64) int64 {
	if len(f.vals) == 0 || b <= f.base {
		return 0
	}
	n := b - f.base
	if n >= int64(len(f.vals)) {
		return f.total
	}
	var s int64
	for j := int(n); j > 0; j -= j & -j {
		s += f.tree[j-1]
	}
	return s
}

// get returns bucket b's count.
func (f *fenwick) get(b int64) int64 {
	i := b - f.base
	if i < 0 || i >= int64(len(f.vals)) {
		return 0
	}
	return f.vals[i]
}

// fit makes the window hold bucket b, rebuilding when it must move.
func (f *fenwick) fit(b int64) {
	if len(f.vals) > 0 && b >= f.base && b < f.base+int64(len(f.vals)) {
		return
	}
	lo, hi := b, b+1
	if len(f.vals) > 0 {
		lo = min(lo, f.firstNonZero())
		hi = max(hi, f.base+int64(len(f.vals)))
	}
	// Leave room to grow on the side time moves to.
	size := max(int64(64), 2*(hi-lo))
	old, oldBase := f.vals, f.base
	f.base = lo
	f.vals = make([]int64, size)
	f.tree = make([]int64, size)
	f.total = 0
	for i, v := range old {
		if v != 0 {
			f.add(oldBase+int64(i), v)
		}
	}
}

// firstNonZero returns the earliest bucket with a count, or the window's
// end when all are zero, so that emptied history is dropped on rebuild.
func (f *fenwick) firstNonZero() int64 {
	for i, v := range f.vals {
		if v != 0 {
			return f.base + int64(i)
		}
	}
	return f.base + int64(len(f.vals))
}
