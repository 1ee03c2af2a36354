// Package draw holds the computations of verifiable draws (see
// docs/fairness.md): the entries that stand for visitors, the commitments
// published before a draw, the seeds revealed after, the shuffled
// pre-queue's order and the lottery's hash chain. The server, `usher
// verify-draw` and the verify page compute alike from these.
package draw

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"strconv"
	"time"
)

// EpochWindows is the number of lottery windows one hash chain commits to.
const EpochWindows = 1024

// Labels keep every hash of this package apart from any other.
const (
	labelEntry  = "usher draw entry v1"
	labelCommit = "usher draw commit v1"
	labelSeed   = "usher draw seed v1"
	labelLink   = "usher draw link v1"
)

// hash returns SHA-256 of parts, each written after its length (8 bytes,
// big-endian), so that no two different lists of parts read alike.
func hash(parts ...[]byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// Entry returns the entry that stands for a visitor in a room's draws: it
// does not reveal the visitor id, and differs from room to room. (A
// visitor's every check-in in a random room computes it: it is built on
// the stack when the room's id is short, as ids are.)
func Entry(room string, visitor [8]byte) [16]byte {
	var h [32]byte
	if len(room) <= 128 {
		var buf [8 + len(labelEntry) + 8 + 128 + 8 + 8]byte
		b := binary.BigEndian.AppendUint64(buf[:0], uint64(len(labelEntry)))
		b = append(b, labelEntry...)
		b = binary.BigEndian.AppendUint64(b, uint64(len(room)))
		b = append(b, room...)
		b = binary.BigEndian.AppendUint64(b, 8)
		b = append(b, visitor[:]...)
		h = sha256.Sum256(b)
	} else {
		h = hash([]byte(labelEntry), []byte(room), visitor[:])
	}
	var e [16]byte
	copy(e[:], h[:16])
	return e
}

// Commit returns the commitment to a draw's secret, published before the
// draw.
func Commit(room, id string, secret [32]byte) [32]byte {
	return hash([]byte(labelCommit), []byte(room), []byte(id), secret[:])
}

// Seed returns a shuffle's seed from its secret and the beacon value (empty
// when none was set).
func Seed(secret [32]byte, beacon string) [32]byte {
	return hash([]byte(labelSeed), secret[:], []byte(beacon))
}

// Key returns an entry's sort key under seed: HMAC-SHA256(seed, entry).
func Key(seed [32]byte, entry [16]byte) [32]byte { return NewKeyer(seed).Key(entry) }

// Keyer computes entries' keys under one seed: HMAC-SHA256 written out
// (RFC 2104, a 32-byte key padded to SHA-256's 64-byte block) over
// arrays, so that a key costs two SHA-256 sums and no allocation.
type Keyer struct{ ipad, opad [64]byte }

// NewKeyer returns a Keyer under seed.
func NewKeyer(seed [32]byte) *Keyer {
	k := new(Keyer)
	for i := range k.ipad {
		var b byte
		if i < len(seed) {
			b = seed[i]
		}
		k.ipad[i], k.opad[i] = b^0x36, b^0x5c
	}
	return k
}

// Key returns entry's key: HMAC-SHA256(seed, entry).
func (k *Keyer) Key(entry [16]byte) [32]byte {
	var in [64 + 16]byte
	copy(in[:], k.ipad[:])
	copy(in[64:], entry[:])
	inner := sha256.Sum256(in[:])
	var out [64 + 32]byte
	copy(out[:], k.opad[:])
	copy(out[64:], inner[:])
	return sha256.Sum256(out[:])
}

// ShuffleSpan returns the number of seconds a shuffled pre-queue's places
// are spread over: the pre-queue's length, at least a day, so that ties
// are rare.
func ShuffleSpan(prequeue, start time.Time) int64 {
	return max(int64(start.Sub(prequeue)/time.Second), 24*3600)
}

// Place returns the place (a unix second before start) of an entry in a
// shuffle: start - span + floor(k64 * span / 2^64), k64 the key's first 8
// bytes. Places follow the keys upwards.
func Place(seed [32]byte, entry [16]byte, start, span int64) int64 {
	return PlaceOf(Key(seed, entry), start, span)
}

// PlaceOf returns the place an entry whose key is k gets (see Place).
func PlaceOf(k [32]byte, start, span int64) int64 {
	hi, _ := bits.Mul64(binary.BigEndian.Uint64(k[:8]), uint64(max(span, 1)))
	return start - span + int64(hi)
}

// ShuffleID names the shuffle of the pre-queue of an event starting at
// start.
func ShuffleID(start time.Time) string { return "shuffle-" + strconv.FormatInt(start.Unix(), 10) }

// Window returns the index of the lottery window holding now: windows are
// refresh intervals on the unix clock, the same on every node.
func Window(now time.Time, refresh time.Duration) int64 {
	return now.UnixMilli() / max(refresh.Milliseconds(), 1)
}

// Epoch returns the epoch of lottery window w.
func Epoch(w int64) int64 { return w / EpochWindows }

// LotteryID names the hash chain of a lottery epoch for a refresh interval.
func LotteryID(refresh time.Duration, epoch int64) string {
	return "lottery-" + strconv.FormatInt(max(refresh.Milliseconds(), 1), 10) + "-" + strconv.FormatInt(epoch, 10)
}

// Chain is one lottery epoch's hash chain: Chain[EpochWindows] is made
// from the secret, each link before it is the hash of the next, and
// Chain[0] is the head, the epoch's commitment.
type Chain [EpochWindows + 1][32]byte

// NewChain returns the chain of secret.
func NewChain(secret [32]byte) *Chain {
	c := new(Chain)
	c[EpochWindows] = hash([]byte(labelLink), secret[:])
	for i := EpochWindows - 1; i >= 0; i-- {
		c[i] = sha256.Sum256(c[i+1][:])
	}
	return c
}

// Head returns the chain's head: the commitment.
func (c *Chain) Head() [32]byte { return c[0] }

// Link returns the link window w draws with (w in the chain's epoch).
func (c *Chain) Link(w int64) [32]byte { return c[w%EpochWindows+1] }

// CheckLink reports whether link is window w's link of the chain whose
// head is head: hashed w mod EpochWindows + 1 times, it is the head.
func CheckLink(head, link [32]byte, w int64) bool {
	if w < 0 {
		return false
	}
	for range w%EpochWindows + 1 {
		link = sha256.Sum256(link[:])
	}
	return hmac.Equal(link[:], head[:])
}

// Value returns an entry's lottery draw with a window's link, uniform in
// [0, 1): the first 53 bits of HMAC-SHA256(link, entry).
func Value(link [32]byte, entry [16]byte) float64 {
	k := Key(link, entry)
	return float64(binary.BigEndian.Uint64(k[:8])>>11) / (1 << 53)
}
