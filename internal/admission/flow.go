package admission

import (
	"math"
	"sync"
	"time"
)

// flows is what an engine has seen of each room's line: its own
// admissions per second (the shape of the rate window, which the store
// only sums), the seconds at which the sessions it counted end unless
// renewed (the store only sums them), and the serving counter's markers
// (how fast the people ahead of a place leave the line). Its memory per
// room is fixed but for the sessions' ends, one count per second of a
// session's length; rooms come from the config: nothing a visitor sends
// makes it grow.
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
	flowMarkers = 128
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
	// ends counts this engine's sessions by the second their active cell
	// expires (a session ends then unless renewed).
	ends   map[int64]int64
	pruned int64 // the second ends was last pruned at
	// prof is the profile of the second prof.sec, made at most once a
	// second; it is never changed once made.
	prof *profile
	// clr is the serving counter's measure as clearing made it last, at
	// second clr.sec for clr.fresh and clr.maxSpan: clearing runs on every
	// waiting decision and scans every marker, so it reuses it within the
	// second.
	clr struct {
		sec            int64
		fresh, maxSpan time.Duration
		sv             serving
		ok             bool
	}
	// refUntil (unix ms) is when the latest refusal stops holding: until
	// then no waiter of bucket refBucket or a later one can go in (see
	// refused).
	refUntil, refBucket int64
	// holdUntil (unix ms) is the moment the check-ins held now wait for,
	// holdN how many were held for it (see flows.hold).
	holdUntil, holdN int64
}

// holdSpare is how many check-ins are held for a moment beyond twice the
// places this engine knows free then: for what it cannot see (places other
// nodes' sessions free, places already free).
const holdSpare = 4

// flowSec is this engine's admissions in second sec: n of them, the last
// at unix ms last.
type flowSec struct{ sec, n, last int64 }

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

// admitted records an admission in room at now, counted in the active
// cell expiring at cell.
func (f *flows) admitted(room string, now time.Time, cell int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	r.moveEnd(now.Unix(), 0, cell)
	sec := now.Unix()
	s := &r.secs[uint64(sec)%flowSecs]
	if s.sec != sec {
		s.sec, s.n = sec, 0
	}
	s.n++
	s.last = max(s.last, now.Add(time.Millisecond-1).UnixMilli()) // as the stores: rounded up
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

// refused records that a decision in room at now found a waiter of
// bucket with ahead live waiters before it and slots free slots after the
// decision, the waiter not admitted by the FIFO rule (when fifo is false,
// only a full room, no slot free, is recorded).
//
// Until the next moment a place can free, the difference ahead - slots
// of any bucket never falls: an admission of a waiter ahead takes one from
// both, and anyone else's takes a slot; a waiter of bucket or a later one
// has at least as many ahead. So once a waiter of bucket is refused, every
// waiter of that bucket or a later one is refused until then. Places free
// at whole seconds (active and waiting cells expire then) and when the
// oldest second of the rate window leaves it, 60 s after its last
// admission (as far as this engine made them; another node's later ones
// only keep the places longer). A session ended by the operator, or a
// change of limits, frees places too: a held waiter is then a second late.
//
// A waiter reach or more places back (total_active_users plus
// new_users_per_minute: it cannot go in within a minute) is not recorded:
// its refusal only says what a near-front waiter's own would, and the
// simulator's aggregate mode, which applies such waiters' check-ins in
// bulk, must hold the same check-ins as a check-in-by-check-in run (see
// flows.hold: the holds for a moment are counted).
func (f *flows) refused(room string, now time.Time, bucket, ahead, slots, reach int64, fifo bool) {
	if ahead >= reach {
		return
	}
	switch {
	case slots <= 0:
		bucket = math.MinInt64
	case !fifo || ahead < slots:
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	ms, sec := now.UnixMilli(), now.Unix()
	until := (sec + 1) * 1000
	if old := r.secs[uint64(sec-60)%flowSecs]; old.sec == sec-60 && old.n > 0 {
		if out := old.last + 60_000; out > ms && out < until {
			until = out
		}
	}
	if until == r.refUntil {
		r.refBucket = min(r.refBucket, bucket)
		return
	}
	if until > r.refUntil {
		r.refUntil, r.refBucket = until, bucket
	}
}

// behind returns when a waiter of bucket in room can go in at the
// soonest, when that is after now (see refused); zero otherwise.
func (f *flows) behind(room string, now time.Time, bucket int64) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rooms[room]
	if r == nil || now.UnixMilli() >= r.refUntil || bucket < r.refBucket {
		return time.Time{}
	}
	return time.UnixMilli(r.refUntil)
}

// hold claims a hold of a check-in to until, the moment refused said places
// may free (the next whole second, or when the rate window lets an earlier
// admission out). It reports false when as many are held for that moment
// as can go in then: twice the places this engine knows free at it (its
// sessions whose count ends then, unless renewed, and its admissions that
// leave the rate window then) and holdSpare more. The others are decided
// at once and refused, as without the hold: holding them only made them
// wait. Without the bound a line whose front is one large arrival second
// (2,500 visitors a second in the standing-room bench, all with nobody
// ahead) had every near-front check-in held up to a second, 130 a second
// at a million waiters, for about one place a second.
func (f *flows) hold(room string, until time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	ms := until.UnixMilli()
	if r.holdUntil != ms {
		r.holdUntil, r.holdN = ms, 0
	}
	free := int64(0)
	for sec := ms / 1000; sec <= (ms+999)/1000; sec++ {
		free += r.ends[sec]
		if old := r.secs[uint64(sec-60)%flowSecs]; old.sec == sec-60 {
			free += old.n
		}
	}
	if r.holdN >= 2*free+holdSpare {
		return false
	}
	r.holdN++
	return true
}

// serving is what the serving counter measured: over span, the live
// waiters ahead of a marker went from a0 to a1 while this engine admitted
// admits visitors; it admitted minute in the last minute (to scale its
// admissions to the room's, which the store counts).
type serving struct {
	span           time.Duration
	a0, a1         int64
	admits, minute int64
}

// clearing returns the serving counter's measure: the marker followed
// longest, among those seen within fresh of now and placed at most maxSpan
// before, while admissions went on and the line moved. ok is false when
// no marker qualifies.
func (f *flows) clearing(room string, now time.Time, fresh, maxSpan time.Duration) (sv serving, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	if c := &r.clr; c.sec == now.Unix() && c.fresh == fresh && c.maxSpan == maxSpan {
		return c.sv, c.ok
	}
	sv, ok = r.clearing(now, fresh, maxSpan)
	r.clr.sec, r.clr.fresh, r.clr.maxSpan, r.clr.sv, r.clr.ok = now.Unix(), fresh, maxSpan, sv, ok
	return sv, ok
}

// clearing is flows.clearing, unlocked and not reused.
func (r *flow) clearing(now time.Time, fresh, maxSpan time.Duration) (sv serving, ok bool) {
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
		return serving{}, false
	}
	sv = serving{span: time.Duration(best.t1-best.t0) * time.Millisecond, a0: best.a0, a1: best.a1, admits: best.adm1 - best.adm0}
	sec := now.Unix()
	for q := sec - 60; q <= sec; q++ {
		if s := r.secs[uint64(q)%flowSecs]; s.sec == q {
			sv.minute += s.n
		}
	}
	return sv, true
}

// served returns how long until the k live waiters beyond the free slots
// have left the line, as sv measured it in a room that admitted
// lastMinute in the last minute: they are admitted at the rate measured,
// and each of them gives up at the rate the others ahead of the marker
// did (a constant hazard h: the time is ln(1 + h k / admitted) / h). ok is
// false when the measure says nothing.
func (sv serving) served(k float64, lastMinute int64) (time.Duration, bool) {
	span := sv.span.Seconds()
	if span <= 0 || k <= 0 {
		return 0, false
	}
	cleared := float64(sv.a0 - sv.a1)
	admitted := float64(sv.admits)
	if sv.minute > 0 && lastMinute > 0 {
		admitted *= float64(lastMinute) / float64(sv.minute) // other nodes' too
	}
	admitted = min(admitted, cleared)
	rate := admitted / span
	if rate <= 0 {
		return 0, false
	}
	h := (cleared - admitted) / span / (float64(sv.a0+sv.a1) / 2)
	t := k / rate
	if x := h * k / rate; x > 1e-9 {
		t = math.Log1p(x) / h
	}
	return time.Duration(t * float64(time.Second)), true
}

// renewed records a session of room renewed at now from the active cell
// from to the cell to.
func (f *flows) renewed(room string, now time.Time, from, to int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.room(room).moveEnd(now.Unix(), from, to)
}

// moveEnd moves one session's end from the cell from (0: none) to the cell
// to, forgetting the cells that expired by now.
func (r *flow) moveEnd(now, from, to int64) {
	if r.ends == nil {
		r.ends = map[int64]int64{}
	}
	if now > r.pruned {
		for c := range r.ends {
			if c <= now {
				delete(r.ends, c)
			}
		}
		r.pruned = now
	}
	if n := r.ends[from]; from > now && n > 0 {
		if n == 1 {
			delete(r.ends, from)
		} else {
			r.ends[from] = n - 1
		}
	}
	if to > now {
		r.ends[to]++
	}
}

// profileSteps is how many seconds ahead a profile's ends reach.
const profileSteps = forecastSteps + 1

// profile is what the forecast needs of a room at one second.
type profile struct {
	sec int64
	// window[x], x = 0..60, is the share of this engine's admissions in the
	// rate window now that are still in it x seconds later; windowOK is
	// false when it made none.
	window   [61]float64
	windowOK bool
	// ended[x] is the share of this engine's running sessions whose
	// active cell expires within x seconds (a session ends then unless
	// renewed); endedOK is false when it counts none.
	ended   [profileSteps]float64
	endedOK bool
}

// profile returns room's profile at now.
func (f *flows) profile(room string, now time.Time) *profile {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.room(room)
	sec := now.Unix()
	if r.prof != nil && r.prof.sec == sec {
		return r.prof
	}
	p := &profile{sec: sec}
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
	if total > 0 {
		p.windowOK = true
		var still int64
		for x := 60; x >= 0; x-- {
			still += per[x]
			p.window[x] = float64(still) / float64(total)
		}
	}
	// A cell expiring at second c frees its place at c, c - sec seconds
	// from now. p.ended first counts the cells ending at each second (whole
	// numbers, exact in a float64), then becomes their cumulative share:
	// an array of counts on the stack would make this frame, and so every
	// check-in's goroutine stack, 4.8 KB larger.
	total = 0
	for c, n := range r.ends {
		if c <= sec {
			continue
		}
		total += n
		if x := c - sec; x < profileSteps {
			p.ended[x] += float64(n)
		}
	}
	if total > 0 {
		p.endedOK = true
		var sum int64
		for x := range p.ended {
			sum += int64(p.ended[x])
			p.ended[x] = float64(sum) / float64(total)
		}
	}
	r.prof = p
	return p
}
