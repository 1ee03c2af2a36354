package local

import (
	"encoding/binary"
)

// recordShards is how many parts a room's records are kept in: expiry
// sweeps one part a second, so that no op waits on a sweep of them all.
const recordShards = 64

// records holds a room's visitor records. A waiter's record (the bulk of a
// long line) packs in 8 bytes next to its 8-byte visitor id, in
// recordShards maps; the others (admitted visitors, times that do not
// pack) are kept whole aside. A million waiters cost 17 to 38 MB, as the
// maps grow.
//
// A record is forgotten in the sweep of its part after its keep has come:
// at most recordShards seconds late, which only remembers a visitor a
// little longer than asked.
type records struct {
	shards [recordShards]map[[8]byte]packed
	whole  map[[8]byte]record
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
	rs := &records{whole: map[[8]byte]record{}}
	for i := range rs.shards {
		rs.shards[i] = map[[8]byte]packed{}
	}
	return rs
}

// shardOf spreads visitor ids over the parts whatever their bytes.
func shardOf(v [8]byte) int {
	return int(binary.LittleEndian.Uint64(v[:]) * 0x9E3779B97F4A7C15 >> 58)
}

func pack(rc record) (packed, bool) {
	if rc.admitted || rc.at < 0 || rc.at > maxAt {
		return 0, false
	}
	sec := rc.at / 1000
	cd, kd := int64(0), rc.keep-sec
	if rc.cell != 0 {
		cd = rc.cell - sec
		if cd < 1 || cd > maxCellD {
			return 0, false
		}
	}
	if kd < 0 || kd > maxKeepD {
		return 0, false
	}
	kd = (kd + keepUnit - 1) / keepUnit
	return packed(uint64(rc.at) | uint64(cd)<<cellShift | uint64(kd)<<keepShift), true
}

func (p packed) record() record {
	at := int64(p & maxAt)
	sec := at / 1000
	rc := record{at: at, keep: sec + int64(p>>keepShift)*keepUnit}
	if cd := int64(p>>cellShift) & maxCellD; cd != 0 {
		rc.cell = sec + cd
	}
	return rc
}

func (rs *records) get(v [8]byte) (record, bool) {
	if p, ok := rs.shards[shardOf(v)][v]; ok {
		return p.record(), true
	}
	rc, ok := rs.whole[v]
	return rc, ok
}

func (rs *records) put(v [8]byte, rc record) {
	sh := rs.shards[shardOf(v)]
	if p, ok := pack(rc); ok {
		sh[v] = p
		delete(rs.whole, v)
		return
	}
	delete(sh, v)
	rs.whole[v] = rc
}

func (rs *records) del(v [8]byte) {
	delete(rs.shards[shardOf(v)], v)
	delete(rs.whole, v)
}

func (rs *records) len() int {
	n := len(rs.whole)
	for _, sh := range rs.shards {
		n += len(sh)
	}
	return n
}

// sweep forgets the records of part i whose keep is at or before now, and
// on part 0's turn the whole ones too, calling gone for each.
func (rs *records) sweep(i int, now int64, gone func([8]byte, record)) {
	for v, p := range rs.shards[i] {
		if rc := p.record(); rc.keep <= now {
			delete(rs.shards[i], v)
			gone(v, rc)
		}
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
