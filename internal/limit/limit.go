// Package limit is the arithmetic of usher's per-client limits: a fixed-size
// count-min sketch of new tickets per client key over a sliding minute, so
// that memory stays the same however many addresses come. The embedded store
// keeps a Sketch in memory; the shared store keeps the same cells in Redis,
// at the positions Cells gives, so both count alike. Client keys are keyed
// hashes (Hasher) under a secret derived from the key ring, so nobody can
// pick addresses that share another client's counters.
package limit

import (
	"crypto/sha256"
	"encoding/binary"
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

// Hasher maps address prefixes to client keys under a secret: the first 8
// bytes of HMAC-SHA256 of the tier, the prefix's length and its masked
// address. Without the secret nobody can tell which prefixes share a
// counter, so no client can pick addresses that spend another's budget
// (the cells of a key, Cells, are public, but the key is not). Every node
// with the same secret gets the same keys, so nodes sharing a store count
// alike. A Hasher is immutable and safe for concurrent use.
type Hasher struct {
	ipad, opad [sha256.BlockSize]byte // HMAC's pads of the secret
}

// NewHasher returns a Hasher under secret (derived from the key ring:
// ticket.DeriveSecret with ticket.PurposeClientLimit); a secret longer
// than SHA-256's block is hashed first, as HMAC does.
func NewHasher(secret []byte) *Hasher {
	if len(secret) > sha256.BlockSize {
		sum := sha256.Sum256(secret)
		secret = sum[:]
	}
	h := &Hasher{}
	copy(h.ipad[:], secret)
	copy(h.opad[:], secret)
	for i := range h.ipad {
		h.ipad[i] ^= 0x36
		h.opad[i] ^= 0x5c
	}
	return h
}

// Tiers of a client limit: the client itself, and the network it is in.
// The tier is hashed with the prefix, so that the two never share a key
// even when their prefix lengths are the same.
const (
	TierClient  = 1
	TierNetwork = 2
)

// Key returns the client key of an address prefix in a tier, never 0; the
// zero Prefix (an unknown client) gives 0. 10.0.0.0/8 and 10.0.0.0/16
// differ; an address and its masked prefix do not.
func (h *Hasher) Key(tier byte, p netip.Prefix) uint64 {
	if !p.IsValid() {
		return 0
	}
	// HMAC-SHA256 on the stack: no allocation.
	var in [sha256.BlockSize + 2 + 16]byte
	copy(in[:], h.ipad[:])
	in[sha256.BlockSize], in[sha256.BlockSize+1] = tier, byte(p.Bits())
	a := p.Masked().Addr().As16()
	copy(in[sha256.BlockSize+2:], a[:])
	inner := sha256.Sum256(in[:])
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], h.opad[:])
	copy(out[sha256.BlockSize:], inner[:])
	sum := sha256.Sum256(out[:])
	return max(binary.BigEndian.Uint64(sum[:8]), 1)
}

// Cells returns the counter of key in each row.
func Cells(key uint64) [Depth]uint32 {
	var out [Depth]uint32
	for d := range Depth {
		out[d] = uint32(mix(key^uint64(d+1)*0x9e3779b97f4a7c15) % Width)
	}
	return out
}

// mix is splitmix64's finaliser: it spreads a key, already unpredictable,
// over the rows.
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
	return TakeAll(now, Tier{s, key, perMinute})
}

// Tier is one limit of TakeAll: a key in a sketch, and its count a minute.
type Tier struct {
	Sketch    *Sketch
	Key       uint64
	PerMinute int
}

// TakeAll counts one new ticket in every tier at now unless one of them
// has reached its limit; it reports whether the ticket was within all of
// them. A ticket over one limit is counted in none, so that a client
// refused for its network's count does not spend its own budget too.
// Tiers must be in distinct sketches.
func TakeAll(now float64, tiers ...Tier) bool {
	n := int64(math.Floor(now / SliceSeconds))
	if n < Slices {
		n = Slices // before 1970 + a minute: no slice before
	}
	type est struct {
		cur   []uint16
		cells [Depth]uint32
		rows  [Depth]float64
		least float64
	}
	var ests [2]est
	all := ests[:0]
	if len(tiers) > len(ests) {
		all = make([]est, 0, len(tiers))
	}
	for _, t := range tiers {
		e := est{cur: t.Sketch.slice(n), cells: Cells(t.Key), least: math.Inf(1)}
		var rows [Slices + 1][]uint16 // oldest first; nil: not held
		for k := range rows {
			if r, ok := t.Sketch.at(n - Slices + int64(k)); ok {
				rows[k] = r
			}
		}
		for d, c := range e.cells {
			i := d*Width + int(c)
			var counts [Slices + 1]uint32
			for k, r := range rows {
				if r != nil {
					counts[k] = uint32(r[i])
				}
			}
			e.rows[d] = Estimate(&counts)
			e.least = min(e.least, e.rows[d])
		}
		if e.least >= float64(t.PerMinute) {
			return false
		}
		all = append(all, e)
	}
	for _, e := range all {
		for d, c := range e.cells {
			i := d*Width + int(c)
			if e.rows[d] <= e.least && e.cur[i] < math.MaxUint16 {
				e.cur[i]++
			}
		}
	}
	return true
}

// slice returns the ring entry of slice n, cleared if it held an older
// slice.
func (s *Sketch) slice(n int64) []uint16 {
	cur, ok := s.at(n)
	if !ok {
		clear(cur)
		s.held[n%(Slices+1)] = n
	}
	return cur
}
