package admission

import (
	"sync"
	"time"
)

// flows is what an engine has seen of each room's line: its own
// admissions per second (the shape of the rate window, which the store
// only sums) and the serving counter's markers (how fast the people ahead
// of a place leave the line). It is a fixed amount of memory per room, and
// rooms come from the config: nothing a visitor sends makes it grow.
type flows struct {
	mu    sync.Mutex
	rooms map[string]*flow
}

// flowSecs is the ring of per-second admission counts: the 61 whole
// seconds of the rate window, and some.
const flowSecs = 64

// flowMarkers is how many markers a room keeps; one is placed every
// markerEvery, so they span markerEvery * flowMarkers.
const (
	flowMarkers = 32
	markerEvery = 5 * time.Second
	// markerMinAhead is the fewest people ahead of a marker worth
	// following: a marker near the front is soon passed and says little.
	markerMinAhead = 20
)

// flow is one room's record. Its fields are guarded by flows.mu.
type flow struct {
	secs  [flowSecs]flowSec
	admN  int64 // this engine's admissions, ever
	marks [flowMarkers]marker
	next  int   // the marker to place next
	last  int64 // unix ms of the latest marker
}

type flowSec struct{ sec, n int64 }

// marker follows one arrival bucket: how many live waiters were ahead of
// it when it was placed (a0 at t0) and at its latest sighting (a1 at t1),
// and this engine's admission counts at both moments.
type marker struct {
	bucket     int64
	t0, t1     int64 // unix ms; t0 == 0: unused
	a0, a1     int64
	adm0, adm1 int64
}

func (f *flows) room(id string) *flow {
	if f.rooms == nil {
		f.rooms = map[string]*flow{}
	}
	r := f.rooms[id]
	if r == nil {
		r = &flow{}
		f.rooms[id] = r
	}
	return r
}

// admitted records an admission in room at now.
func (f *flows) admitted(room string, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	sec := now.Unix()
	s := &r.secs[uint64(sec)%flowSecs]
	if s.sec != sec {
		s.sec, s.n = sec, 0
	}
	s.n++
	r.admN++
}

// waiting records a waiter of bucket with ahead live waiters in front of it
// at now: it updates the markers that follow bucket, and places a new one
// every markerEvery.
func (f *flows) waiting(room string, now time.Time, bucket, ahead int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	ms := now.UnixMilli()
	for k := range r.marks {
		m := &r.marks[k]
		if m.t0 != 0 && m.bucket == bucket && ms > m.t1 {
			m.t1, m.a1, m.adm1 = ms, ahead, r.admN
		}
	}
	if ahead < markerMinAhead || ms-r.last < markerEvery.Milliseconds() {
		return
	}
	r.marks[r.next] = marker{bucket: bucket, t0: ms, t1: ms, a0: ahead, a1: ahead, adm0: r.admN, adm1: r.admN}
	r.next = (r.next + 1) % flowMarkers
	r.last = ms
}

// window returns, for x = 0..60, the share (0 to 1) of the last minute's
// admissions made by this engine that are still in the rate window x
// seconds from now; ok is false when it made none.
func (f *flows) window(room string, now time.Time) (share [61]float64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	sec := now.Unix()
	// The store's window at a second s holds the admissions of the 61
	// seconds s-60..s. Of those counted now, the ones of second q are still
	// in it x seconds later while q >= sec+x-60.
	var per [61]int64 // per[i]: admissions of second sec-60+i
	var total int64
	for i := range per {
		q := sec - 60 + int64(i)
		if s := r.secs[uint64(q)%flowSecs]; s.sec == q {
			per[i] = s.n
			total += s.n
		}
	}
	if total == 0 {
		return share, false
	}
	// still(x) = sum of per[i] for i >= x.
	var still int64
	for x := 60; x >= 0; x-- {
		still += per[x]
		share[x] = float64(still) / float64(total)
	}
	return share, true
}

// clearing returns how fast the live waiters ahead of a place leave the
// line (admitted, or gone), in people per second, measured over span:
// from the marker followed longest, among those seen within fresh of now
// and placed at most maxSpan before, while admissions went on. ok is
// false when no marker qualifies.
func (f *flows) clearing(room string, now time.Time, fresh, maxSpan time.Duration) (rate float64, span time.Duration, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	ms := now.UnixMilli()
	var best *marker
	for k := range r.marks {
		m := &r.marks[k]
		switch {
		case m.t0 == 0, ms-m.t1 > fresh.Milliseconds(), ms-m.t0 > maxSpan.Milliseconds():
			continue
		case m.adm1 <= m.adm0, m.a1 >= m.a0:
			// Nobody was let in, or the line did not move: a stall (sessions
			// not yet over) that says nothing of how fast it will move.
			continue
		}
		if best == nil || m.t1-m.t0 > best.t1-best.t0 {
			best = m
		}
	}
	if best == nil || best.t1 <= best.t0 {
		return 0, 0, false
	}
	span = time.Duration(best.t1-best.t0) * time.Millisecond
	return float64(best.a0-best.a1) / span.Seconds(), span, true
}
