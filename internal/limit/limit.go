// Package limit is the arithmetic of usher's per-client limits: a fixed-size
// count-min sketch of new tickets per client key over a sliding minute, so
// that memory stays the same however many addresses come. The embedded store
// keeps a Sketch in memory; the shared store keeps the same cells in Redis,
// at the positions Cells gives, so both count alike.
package limit

import (
	"math"
	"net/netip"
)

// Depth and Width are the sketch's shape: Depth rows of Width counters.
// With Width 65,536 the sketch over-counts a client by about the number of
// distinct clients a minute over 65,536 per row, and the least of the Depth
// rows is nearly always exact below a hundred thousand clients a minute.
const (
	Depth = 4
	Width = 1 << 16
)

// Key returns the client key of an address prefix: a hash of its bytes and
// length, so that 10.0.0.0/8 and 10.0.0.0/16 differ. The zero Prefix gives
// key 0 (an unknown client).
func Key(p netip.Prefix) uint64 {
	if !p.IsValid() {
		return 0
	}
	a := p.Masked().Addr().As16()
	h := uint64(p.Bits()) + 1
	for i := 0; i < 16; i += 8 {
		var w uint64
		for _, b := range a[i : i+8] {
			w = w<<8 | uint64(b)
		}
		h = mix(h ^ w)
	}
	return h
}

// Cells returns the counter of key in each row.
func Cells(key uint64) [Depth]uint32 {
	var out [Depth]uint32
	for d := range Depth {
		out[d] = uint32(mix(key^uint64(d+1)*0x9e3779b97f4a7c15) % Width)
	}
	return out
}

// mix is splitmix64's finaliser.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Slices and SliceSeconds: the minute is counted in slices of
// SliceSeconds, and a ticket counts until the slice it was taken in is
// more than Slices slices old: for 60 to 70 s. So no 60 s window ever holds
// more than the limit. Counting by the minute, with the previous minute
// weighed by what is left of it in the window (which supposes its tickets
// spread evenly), let a client that took its whole budget at the end of a
// minute take most of it again before the minute after ended: up to about
// twice the limit in one 60 s window. What it costs: a client that keeps
// asking gets the limit every 60 to 70 s, not every 60.
const (
	Slices       = 6
	SliceSeconds = 10
)

// Estimate is a counter's count over the sliding minute from its counts
// in the last Slices+1 slices (the current one included): all of them, so
// that a ticket counts until it is out of any window that holds it.
func Estimate(counts *[Slices + 1]uint32) float64 {
	e := 0.0
	for _, c := range counts {
		e += float64(c)
	}
	return e
}

// Sketch counts new tickets per client key over a sliding minute. Its
// memory is fixed: Depth × Width counters for each of Slices+1 slices. It
// is not safe for concurrent use.
type Sketch struct {
	ring [Slices + 1][]uint16
	held [Slices + 1]int64 // the slice (unix seconds / SliceSeconds) each ring entry counts; -1: none
}

// NewSketch returns an empty sketch.
func NewSketch() *Sketch {
	s := &Sketch{}
	for i := range s.ring {
		s.ring[i] = make([]uint16, Depth*Width)
		s.held[i] = -1
	}
	return s
}

// at returns the ring entry of slice n and whether it holds it.
func (s *Sketch) at(n int64) ([]uint16, bool) {
	i := int(n % (Slices + 1))
	return s.ring[i], s.held[i] == n
}

// Take counts one new ticket for key at now (unix seconds, with its
// fraction) unless the key's count has reached perMinute; it reports
// whether the ticket was within the limit. Only tickets within the limit
// are counted (conservative update: the rows at the least estimate grow),
// so a client that keeps asking gets perMinute tickets a minute. A clock
// that goes back counts in the slice it is in.
func (s *Sketch) Take(key uint64, now float64, perMinute int) bool {
	n := int64(math.Floor(now / SliceSeconds))
	if n < Slices {
		n = Slices // before 1970 + a minute: no slice before
	}
	cur, ok := s.at(n)
	if !ok {
		clear(cur)
		s.held[n%(Slices+1)] = n
	}
	var rows [Slices + 1][]uint16 // oldest first; nil: not held
	for k := range rows {
		if r, ok := s.at(n - Slices + int64(k)); ok {
			rows[k] = r
		}
	}
	cells := Cells(key)
	var est [Depth]float64
	least := math.Inf(1)
	for d, c := range cells {
		i := d*Width + int(c)
		var counts [Slices + 1]uint32
		for k, r := range rows {
			if r != nil {
				counts[k] = uint32(r[i])
			}
		}
		est[d] = Estimate(&counts)
		least = min(least, est[d])
	}
	if least >= float64(perMinute) {
		return false
	}
	for d, c := range cells {
		i := d*Width + int(c)
		if est[d] <= least && cur[i] < math.MaxUint16 {
			cur[i]++
		}
	}
	return true
}
