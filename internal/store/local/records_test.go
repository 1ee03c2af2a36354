package local

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestRecordsKeepWhatTheyAreGiven: any record put is got back as it was,
// packed or whole, except that a packed keep may be up to keepUnit-1
// seconds later (remembered a little longer); delete forgets it.
func TestRecordsKeepWhatTheyAreGiven(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rs := newRecords()
	want := map[[8]byte]record{}
	packedN := 0
	for i := range 200_000 {
		var v [8]byte
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		at := 1_700_000_000_000 + rng.Int64N(1e12)
		sec := at / 1000
		rc := record{at: at, keep: sec + rng.Int64N(10_000), admitted: rng.IntN(4) == 0}
		if rng.IntN(8) != 0 {
			rc.cell = sec + rng.Int64N(1500)
		}
		switch rng.IntN(10) {
		case 0: // none
		case 1:
			rc.from = at - 1<<32 - rng.Int64N(1000) // too far back to pack
		default:
			rc.from = at - 1 - rng.Int64N(600_000)
		}
		switch rng.IntN(50) {
		case 0:
			rc.at = -rc.at // before 1970: kept whole
		case 1:
			rc.at = 1 << 50 // past 2109: kept whole
		}
		if _, _, ok := pack(rc); ok {
			packedN++
		}
		rs.put(v, rc)
		want[v] = rc
		if i%7 == 0 { // a later record replaces the first
			rc.admitted = !rc.admitted
			rc.at++
			rs.put(v, rc)
			want[v] = rc
		}
	}
	if packedN < 50_000 || packedN > 150_000 {
		t.Fatalf("%d of 200,000 records packed: the test must exercise both ways", packedN)
	}
	if rs.len() != len(want) {
		t.Fatalf("len %d, want %d", rs.len(), len(want))
	}
	for v, w := range want {
		got, ok := rs.get(v)
		if !ok {
			t.Fatalf("%x forgotten", v)
		}
		if got.at != w.at || got.cell != w.cell || got.admitted != w.admitted || got.from != w.from || got.keep < w.keep || got.keep >= w.keep+keepUnit {
			t.Fatalf("%x: got %+v, put %+v", v, got, w)
		}
	}
	for v := range want {
		rs.del(v)
	}
	if rs.len() != 0 {
		t.Fatalf("%d records left after deleting them all", rs.len())
	}
}

// TestRecordsForgottenWithinAMinuteOfKeep: a room forgets a record in the
// first expiry past its keep plus recordShards seconds, and not before its
// keep.
func TestRecordsForgottenWithinAMinuteOfKeep(t *testing.T) {
	r := newRoom(false)
	t0 := int64(1_800_000_000)
	r.expire(t0)
	for i := range 1000 {
		var v [8]byte
		v[0], v[1] = byte(i), byte(i>>8)
		r.remember(v, record{at: t0 * 1000, cell: t0 + 30, keep: t0 + 100 + int64(i%50)}, t0)
	}
	for now := t0 + 1; now <= t0+100+50+recordShards; now++ {
		r.expire(now)
		n := 0
		for i := range 1000 {
			var v [8]byte
			v[0], v[1] = byte(i), byte(i>>8)
			rc, ok := r.records.get(v)
			if ok {
				n++
			}
			if !ok && now < t0+100+int64(i%50) {
				t.Fatalf("at +%d visitor %d forgotten before its keep +%d", now-t0, i, 100+i%50)
			}
			if ok && now >= rc.keep+recordShards {
				t.Fatalf("at +%d visitor %d still remembered, keep +%d", now-t0, i, rc.keep-t0)
			}
		}
		if now == t0+100+50+recordShards && n != 0 {
			t.Fatalf("%d records left", n)
		}
	}
}

// TestRecordsMemory: a million waiters' records take at most 30 bytes
// each (20 bytes a slot, the tables kept 68-85% full), outside the Go heap
// where the platform allows it.
func TestRecordsMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a million records")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rs := newRecords()
	at := int64(1_800_000_000_000)
	const n = 1_000_000
	for i := range n {
		var v [8]byte
		v[0], v[1], v[2], v[3] = byte(i), byte(i>>8), byte(i>>16), 1
		a := at + int64(i)
		rs.put(v, record{at: a, cell: a/1000 + 150, keep: a/1000 + 600, from: a - 20_000})
	}
	if len(rs.whole) != 0 {
		t.Fatalf("%d waiting records did not pack", len(rs.whole))
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	slots := 0
	for i := range rs.shards {
		slots += len(rs.shards[i].keys)
	}
	per := float64(20*slots) / n
	heap := (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	t.Logf("%.1f bytes a record in the tables, %.1f on the Go heap", per, heap)
	if per > 30 {
		t.Fatalf("%.1f bytes a record, want at most 30", per)
	}
	if heap > 1 && runtime.GOOS == "linux" {
		t.Fatalf("%.1f bytes a record on the Go heap, want the tables outside it", heap)
	}
	runtime.KeepAlive(rs)
}

// TestTableAgainstAMap: random puts and deletes on one table, keys from a
// small set so that probes collide and wrap around the end, agree with a
// map after every step.
func TestTableAgainstAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 20 {
		var tb table
		type val struct {
			p  packed
			fd fromDelta
		}
		want := map[uint64]val{}
		keys := 1 + rng.IntN(300)
		for step := range 5000 {
			k := 1 + uint64(rng.IntN(keys))
			if rng.IntN(3) == 0 {
				tb.del(k)
				delete(want, k)
			} else {
				p, fd := packed(rng.Uint64()), fromDelta(rng.Uint32())
				tb.put(k, p, fd)
				want[k] = val{p, fd}
			}
			if tb.n != len(want) {
				t.Fatalf("round %d step %d: %d entries, want %d", round, step, tb.n, len(want))
			}
			if step%97 == 0 || step == 4999 {
				for k := uint64(1); k <= uint64(keys); k++ {
					p, fd, ok := tb.get(k)
					w, has := want[k]
					if ok != has || (val{p, fd}) != w {
						t.Fatalf("round %d step %d: key %d got %v %v %v, want %v %v", round, step, k, p, fd, ok, w, has)
					}
				}
			}
		}
	}
}
