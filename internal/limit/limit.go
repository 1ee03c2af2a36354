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

// Estimate is the sliding-minute estimate of a counter from its counts in
// the previous and the current minute, frac of the way into the current
// one: the previous minute weighs what is left of it.
func Estimate(prev, cur uint32, frac float64) float64 {
	return float64(prev)*(1-frac) + float64(cur)
}

// Sketch counts new tickets per client key over a sliding minute. Its
// memory is fixed: Depth × Width counters for each of two minutes. It is
// not safe for concurrent use.
type Sketch struct {
	minute    int64 // the unix minute cur counts
	cur, prev []uint16
}

// NewSketch returns an empty sketch.
func NewSketch() *Sketch {
	return &Sketch{cur: make([]uint16, Depth*Width), prev: make([]uint16, Depth*Width)}
}

// roll moves the sketch to the minute of now (unix seconds).
func (s *Sketch) roll(now int64) {
	m := now / 60
	switch {
	case m == s.minute:
	case m == s.minute+1:
		s.prev, s.cur = s.cur, s.prev
		clear(s.cur)
		s.minute = m
	case m > s.minute+1:
		clear(s.prev)
		clear(s.cur)
		s.minute = m
	}
	// A clock that went back keeps counting in the current minute.
}

// Take counts one new ticket for key at now (unix seconds, with its
// fraction) unless the key's estimate has reached perMinute; it reports
// whether the ticket was within the limit. Only tickets within the limit
// are counted (conservative update: the rows at the least estimate grow),
// so a client that keeps asking gets perMinute tickets a minute.
func (s *Sketch) Take(key uint64, now float64, perMinute int) bool {
	sec := int64(math.Floor(now))
	s.roll(sec)
	frac := (now - float64(s.minute*60)) / 60
	frac = min(max(frac, 0), 1)
	cells := Cells(key)
	least := math.Inf(1)
	for d, c := range cells {
		i := d*Width + int(c)
		least = min(least, Estimate(uint32(s.prev[i]), uint32(s.cur[i]), frac))
	}
	if least >= float64(perMinute) {
		return false
	}
	for d, c := range cells {
		i := d*Width + int(c)
		if Estimate(uint32(s.prev[i]), uint32(s.cur[i]), frac) <= least && s.cur[i] < math.MaxUint16 {
			s.cur[i]++
		}
	}
	return true
}
