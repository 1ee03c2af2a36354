package local

// counts holds live waiting counts per arrival bucket (a unix second) in a
// sparse tree of 64-slot pages: the page of level l holding bucket b covers
// 64^(l+1) seconds, and its slot for b counts the waiters in b's 64^l
// seconds. Pages are kept only while they hold a count, so memory grows with
// the buckets in use, not with the span between them (a pre-queue shuffled
// over a month of seconds costs what its waiters cost), and "how many before
// b" reads one page per level.
type counts struct {
	levels [levels]map[int64]*page
	total  int64
}

// page is one page of counts and the number of its slots that are not
// zero.
type page struct {
	c [fan]int32
	n int
}

const (
	fanBits = 6
	fan     = 1 << fanBits
	levels  = 6 // fan^levels = 2^36 seconds, past the year 3000
	// maxBucket bounds the buckets held; buckets outside [0, maxBucket]
	// are clamped (tickets hold seconds from 2020 to 2999).
	maxBucket = 1<<(fanBits*levels) - 1
)

func clampBucket(b int64) int64 { return min(max(b, 0), maxBucket) }

// add adds d to bucket b.
func (c *counts) add(b, d int64) {
	if d == 0 {
		return
	}
	b = clampBucket(b)
	c.total += d
	for l := range levels {
		m := c.levels[l]
		if m == nil {
			m = map[int64]*page{}
			c.levels[l] = m
		}
		idx := b >> (fanBits * (l + 1))
		slot := (b >> (fanBits * l)) & (fan - 1)
		p := m[idx]
		if p == nil {
			p = &page{}
			m[idx] = p
		}
		was := p.c[slot]
		p.c[slot] += int32(d)
		switch {
		case was == 0 && p.c[slot] != 0:
			p.n++
		case was != 0 && p.c[slot] == 0:
			p.n--
			if p.n == 0 {
				delete(m, idx)
			}
		}
	}
}

// before returns the sum of the buckets strictly before b.
func (c *counts) before(b int64) int64 {
	b = clampBucket(b)
	var s int64
	for l := range levels {
		p := c.levels[l][b>>(fanBits*(l+1))]
		if p == nil {
			continue
		}
		slot := (b >> (fanBits * l)) & (fan - 1)
		for i := range slot {
			s += int64(p.c[i])
		}
	}
	return s
}

// get returns bucket b's count.
func (c *counts) get(b int64) int64 {
	b = clampBucket(b)
	if p := c.levels[0][b>>fanBits]; p != nil {
		return int64(p.c[b&(fan-1)])
	}
	return 0
}

// pages returns the number of pages held (for memory tests).
func (c *counts) pages() int {
	n := 0
	for _, m := range c.levels {
		n += len(m)
	}
	return n
}
