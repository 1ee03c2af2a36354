package local

import (
	"encoding/binary"
	"math/bits"
)

// recordShards is how many parts a room's records are kept in: expiry
// sweeps one part a second, so that no op waits on a sweep of them all.
const recordShards = 64

// records holds a room's visitor records. A waiter's record (the bulk of a
// long line) packs in 8 bytes, and the ticket it was counted from in 4
// more, next to its 8-byte visitor id, in recordShards open-addressed
// tables kept 68-85% full; the others (admitted visitors, times that do
// not pack, the all-zero id) are kept whole aside in a map. A million
// waiters cost about 24 MB.
//
// A record is forgotten in the sweep of its part after its keep has come:
// at most recordShards seconds late, which only remembers a visitor a
// little longer than asked.
type records struct {
	shards [recordShards]table
	whole  map[[8]byte]record
	gone   []uint64 // a sweep's keys to delete, reused
}

// packed is a waiting record in 64 bits: its counted-at time in ms (bits
// 0-41, to the year 2109), its cell as the seconds after the counted-at
// second (bits 42-51, 0: none) and its keep likewise in units of 2 s,
// rounded up (bits 52-63: up to 2h16m).
type packed uint64

const (
	atBits    = 42
	cellBits  = 10
	keepBits  = 12
	keepUnit  = 2
	maxAt     = 1<<atBits - 1
	maxCellD  = 1<<cellBits - 1
	maxKeepD  = (1<<keepBits - 1) * keepUnit
	cellShift = atBits
	keepShift = atBits + cellBits
)

func newRecords() *records {
	return &records{whole: map[[8]byte]record{}}
}

// shardOf spreads visitor ids over the parts whatever their bytes.
func shardOf(v [8]byte) int {
	return int(binary.LittleEndian.Uint64(v[:]) * 0x9E3779B97F4A7C15 >> 58)
}

// fromDelta is how a packed record keeps the ticket it was counted from:
// the milliseconds from it to the record's own (0: none).
type fromDelta uint32

func pack(rc record) (packed, fromDelta, bool) {
	if rc.admitted || rc.at < 0 || rc.at > maxAt {
		return 0, 0, false
	}
	var fd fromDelta
	if rc.from != 0 {
		d := rc.at - rc.from
		if rc.from < 0 || d < 1 || d > 1<<32-1 {
			return 0, 0, false
		}
		fd = fromDelta(d)
	}
	sec := rc.at / 1000
	cd, kd := int64(0), rc.keep-sec
	if rc.cell != 0 {
		cd = rc.cell - sec
		if cd < 1 || cd > maxCellD {
			return 0, 0, false
		}
	}
	if kd < 0 || kd > maxKeepD {
		return 0, 0, false
	}
	kd = (kd + keepUnit - 1) / keepUnit
	return packed(uint64(rc.at) | uint64(cd)<<cellShift | uint64(kd)<<keepShift), fd, true
}

func (p packed) record(fd fromDelta) record {
	at := int64(p & maxAt)
	sec := at / 1000
	rc := record{at: at, keep: sec + int64(p>>keepShift)*keepUnit}
	if cd := int64(p>>cellShift) & maxCellD; cd != 0 {
		rc.cell = sec + cd
	}
	if fd != 0 {
		rc.from = at - int64(fd)
	}
	return rc
}

func idKey(v [8]byte) uint64 { return binary.LittleEndian.Uint64(v[:]) }

func keyID(k uint64) (v [8]byte) {
	binary.LittleEndian.PutUint64(v[:], k)
	return v
}

func (rs *records) get(v [8]byte) (record, bool) {
	if p, fd, ok := rs.shards[shardOf(v)].get(idKey(v)); ok {
		return p.record(fd), true
	}
	rc, ok := rs.whole[v]
	return rc, ok
}

func (rs *records) put(v [8]byte, rc record) {
	t := &rs.shards[shardOf(v)]
	if p, fd, ok := pack(rc); ok && idKey(v) != 0 {
		t.put(idKey(v), p, fd)
		delete(rs.whole, v)
		return
	}
	t.del(idKey(v))
	rs.whole[v] = rc
}

func (rs *records) del(v [8]byte) {
	rs.shards[shardOf(v)].del(idKey(v))
	delete(rs.whole, v)
}

func (rs *records) len() int {
	n := len(rs.whole)
	for i := range rs.shards {
		n += rs.shards[i].n
	}
	return n
}

// sweep forgets the records of part i whose keep is at or before now, and
// on part 0's turn the whole ones too, calling gone for each.
func (rs *records) sweep(i int, now int64, gone func([8]byte, record)) {
	t := &rs.shards[i]
	rs.gone = rs.gone[:0]
	for j, k := range t.keys {
		if k != 0 && t.vals[j].record(0).keep <= now {
			rs.gone = append(rs.gone, k)
		}
	}
	for _, k := range rs.gone {
		p, fd, _ := t.get(k)
		t.del(k)
		gone(keyID(k), p.record(fd))
	}
	if i != 0 {
		return
	}
	for v, rc := range rs.whole {
		if rc.keep <= now {
			delete(rs.whole, v)
			gone(v, rc)
		}
	}
}

// table is an open-addressed hash table of packed records by visitor id
// (0: an empty slot), with linear probing and deletion by backward shift
// (no tombstones). It grows by a quarter when 85% full, so it stays 68-85%
// full: 24-30 bytes a record.
type table struct {
	keys  []uint64
	vals  []packed
	froms []fromDelta
	n     int
	free  func() // releases keys, vals and froms (see newSlots)
}

// home is k's first slot: its mixed bits scaled to the table's size.
func (t *table) home(k uint64) int {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	k *= 0xc4ceb9fe1a85ec53
	k ^= k >> 33
	hi, _ := bits.Mul64(k, uint64(len(t.keys)))
	return int(hi)
}

// find returns k's slot, or the empty slot where it would go; k is not 0.
func (t *table) find(k uint64) (int, bool) {
	for i := t.home(k); ; i++ {
		if i == len(t.keys) {
			i = 0
		}
		switch t.keys[i] {
		case k:
			return i, true
		case 0:
			return i, false
		}
	}
}

func (t *table) get(k uint64) (packed, fromDelta, bool) {
	if k == 0 || t.n == 0 {
		return 0, 0, false
	}
	if i, ok := t.find(k); ok {
		return t.vals[i], t.froms[i], true
	}
	return 0, 0, false
}

func (t *table) put(k uint64, p packed, fd fromDelta) {
	if (t.n+1)*20 > len(t.keys)*17 {
		t.grow()
	}
	i, ok := t.find(k)
	if !ok {
		t.keys[i] = k
		t.n++
	}
	t.vals[i], t.froms[i] = p, fd
}

func (t *table) grow() {
	old, oldv, oldf, free := t.keys, t.vals, t.froms, t.free
	size := max(16, len(old)+len(old)/4)
	t.keys, t.vals, t.froms, t.free = newSlots(size)
	for j, k := range old {
		if k != 0 {
			i, _ := t.find(k)
			t.keys[i], t.vals[i], t.froms[i] = k, oldv[j], oldf[j]
		}
	}
	if free != nil {
		free()
	}
}

// del removes k, shifting back the entries after it that would otherwise
// no longer be found.
func (t *table) del(k uint64) {
	if k == 0 || t.n == 0 {
		return
	}
	i, ok := t.find(k)
	if !ok {
		return
	}
	n := len(t.keys)
	for j := i; ; {
		j++
		if j == n {
			j = 0
		}
		if t.keys[j] == 0 {
			break
		}
		// The entry at j may move to the hole at i unless its home lies
		// cyclically in (i, j].
		h := t.home(t.keys[j])
		if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
			t.keys[i], t.vals[i], t.froms[i] = t.keys[j], t.vals[j], t.froms[j]
			i = j
		}
	}
	t.keys[i], t.vals[i], t.froms[i] = 0, 0, 0
	t.n--
}
