package local

import (
	"github.com/usherhq/usher"
)

// rateWindow is the number of one-second admission buckets summed for the
// rate limit: an admission at now is refused when the admissions in
// (now-60s, now] reach the limit, and those fall in 61 whole seconds.
const rateWindow = 61

// cellKey names one counter for persistence.
type cellKey struct {
	kind   byte // kindWaiting, kindActive or kindAdmitted
	exp    int64
	bucket int64
}

const (
	kindWaiting  byte = 'w'
	kindActive   byte = 'a'
	kindAdmitted byte = 'r'
)

// room is one room's counters. It is not safe for concurrent use; Store
// serialises access.
type room struct {
	waiting  map[int64]map[int64]int64 // expiry second -> bucket -> count
	live     fenwick                   // bucket -> live waiting count
	active   map[int64]int64           // expiry second -> count
	activeN  int64                     // sum of active
	admitted map[int64]int64           // second -> admissions
	admN     int64                     // sum of admitted
	expired  int64                     // every cell with expiry <= this is gone

	// dirty collects the keys changed since the last flush; nil when the
	// store does not persist.
	dirty map[cellKey]struct{}
}

func newRoom(persist bool) *room {
	r := &room{
		waiting:  map[int64]map[int64]int64{},
		active:   map[int64]int64{},
		admitted: map[int64]int64{},
	}
	if persist {
		r.dirty = map[cellKey]struct{}{}
	}
	return r
}

func (r *room) mark(k cellKey) {
	if r.dirty != nil {
		r.dirty[k] = struct{}{}
	}
}

// expire drops every cell whose expiry second is at or before now, and
// admissions that left the rate window.
func (r *room) expire(now int64) {
	if now <= r.expired {
		return
	}
	// Walk the maps rather than the seconds when the gap is long (idle room).
	for exp, bs := range r.waiting {
		if exp > now {
			continue
		}
		for b, c := range bs {
			r.live.add(b, -c)
			r.mark(cellKey{kindWaiting, exp, b})
		}
		delete(r.waiting, exp)
	}
	for exp, c := range r.active {
		if exp > now {
			continue
		}
		r.activeN -= c
		delete(r.active, exp)
		r.mark(cellKey{kindActive, exp, 0})
	}
	for sec, c := range r.admitted {
		if sec > now-rateWindow {
			continue
		}
		r.admN -= c
		delete(r.admitted, sec)
		r.mark(cellKey{kind: kindAdmitted, exp: sec})
	}
	r.expired = now
	if r.live.total == 0 && len(r.waiting) == 0 {
		r.live = fenwick{} // nobody waits: drop the history
	}
}

func (r *room) addWaiting(exp, bucket, d int64) {
	bs := r.waiting[exp]
	if bs == nil {
		bs = map[int64]int64{}
		r.waiting[exp] = bs
	}
	bs[bucket] += d
	if bs[bucket] == 0 {
		delete(bs, bucket)
		if len(bs) == 0 {
			delete(r.waiting, exp)
		}
	}
	r.live.add(bucket, d)
	r.mark(cellKey{kindWaiting, exp, bucket})
}

func (r *room) addActive(exp, d int64) {
	r.active[exp] += d
	if r.active[exp] == 0 {
		delete(r.active, exp)
	}
	r.activeN += d
	r.mark(cellKey{kindActive, exp, 0})
}

func (r *room) addAdmitted(sec, d int64) {
	r.admitted[sec] += d
	r.admN += d
	r.mark(cellKey{kind: kindAdmitted, exp: sec})
}

// stats returns the counters at now; expire(now) must have run.
func (r *room) stats(total, perMinute int) usher.RoomStats {
	s := usher.RoomStats{
		Active:             max(r.activeN, 0),
		Waiting:            max(r.live.total, 0),
		AdmittedLastMinute: max(r.admN, 0),
	}
	s.Slots = max(0, min(int64(total)-s.Active, int64(perMinute)-s.AdmittedLastMinute))
	return s
}

// admit applies one admission decision; trusted reports whether the
// visitor's From cell may be decremented (see Store.trusted).
func (r *room) admit(op *usher.AdmitOp, trusted bool) usher.AdmitResult {
	now := op.Now.Unix()
	r.expire(now)
	if trusted && op.From.Exp > now {
		r.addWaiting(op.From.Exp, op.Bucket, -1)
	}
	res := usher.AdmitResult{Ahead: max(r.live.before(op.Bucket), 0)}
	st := r.stats(op.TotalActiveUsers, op.NewUsersPerMinute)
	switch {
	case op.Force:
		res.Admitted = true
	case op.NoAdmit || st.Slots <= 0:
	case op.Random:
		res.Admitted = op.Draw*float64(st.Waiting+1) < float64(st.Slots)
	default:
		res.Admitted = res.Ahead < st.Slots
	}
	switch {
	case res.Admitted:
		if op.ActiveExp > now {
			r.addActive(op.ActiveExp, 1)
		}
		r.addAdmitted(now, 1)
	case op.WaitExp > now:
		r.addWaiting(op.WaitExp, op.Bucket, 1)
	}
	res.RoomStats = r.stats(op.TotalActiveUsers, op.NewUsersPerMinute)
	return res
}

// touch applies activity moves.
func (r *room) touch(now int64, moves []usher.Move, trusted func(usher.Cell) bool) {
	r.expire(now)
	for _, m := range moves {
		if m.From.Exp > now && trusted(m.From) {
			r.addActive(m.From.Exp, -1)
		}
		if m.To > now {
			r.addActive(m.To, 1)
		}
	}
}

// value returns the current count under k, for persistence.
func (r *room) value(k cellKey) int64 {
	switch k.kind {
	case kindWaiting:
		return r.waiting[k.exp][k.bucket]
	case kindActive:
		return r.active[k.exp]
	case kindAdmitted:
		return r.admitted[k.exp]
	}
	return 0
}

// load sets a persisted count (used when opening the store).
func (r *room) load(k cellKey, v int64) {
	switch k.kind {
	case kindWaiting:
		r.addWaiting(k.exp, k.bucket, v)
	case kindActive:
		r.addActive(k.exp, v)
	case kindAdmitted:
		r.addAdmitted(k.exp, v)
	}
}
