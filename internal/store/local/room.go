package local

import (
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/limit"
)

// rateWindow is the number of one-second admission buckets summed for the
// rate limit: an admission at now is refused when the admissions in
// (now-60s, now] reach the limit, and those fall in 61 whole seconds. The
// oldest of them, the second now-60, is left out as soon as its last
// admission is 60 s old (rateOut), so that a second's admissions leave
// the window when the last of them does, not up to a second later.
const rateWindow = 61

// cellKey names one counter, or one visitor's record, for persistence.
type cellKey struct {
	kind   byte // kindWaiting, kindActive, kindAdmitted or kindRecord
	exp    int64
	bucket int64
}

const (
	kindWaiting  byte = 'w'
	kindActive   byte = 'a'
	kindAdmitted byte = 'r'
	// kindRecord keys an admitted visitor's record: exp and bucket hold
	// the visitor id (Record below).
	kindRecord byte = 'v'
)

// record is what the store remembers of one visitor: the ticket it counted
// last (its counted-at time in ms), the cell it counted it in, until when
// to remember it, and the ticket it was counted from.
type record struct {
	at       int64 // ms
	cell     int64 // expiry second; 0: none
	keep     int64 // unix second
	admitted bool
	from     int64 // ms; 0: none
}

func (rc record) public() usher.Record {
	r := usher.Record{At: time.UnixMilli(rc.at).UTC(), Cell: rc.cell, Admitted: rc.admitted}
	if rc.from != 0 {
		r.From = time.UnixMilli(rc.from).UTC()
	}
	return r
}

// takesOver reports whether op's ticket, older than the visitor's record
// rc, takes the record over: a waiting record counted from that very
// ticket, no later and in no later cell than op allows
// (usher.AdmitOp.TakeOver).
func takesOver(op *usher.AdmitOp, rc record, from int64) bool {
	return !op.TakeOver.IsZero() && !rc.admitted && from != 0 && from == rc.from &&
		rc.at <= op.TakeOver.UnixMilli() && (op.TakeOverCell == 0 || rc.cell <= op.TakeOverCell)
}

// room is one room's counters and records. It is not safe for concurrent
// use; Store serialises access.
type room struct {
	waiting  map[int64]map[int64]int64 // expiry second -> bucket -> count
	live     counts                    // bucket -> live waiting count
	active   map[int64]int64           // expiry second -> count
	activeN  int64                     // sum of active
	admitted map[int64]int64           // second -> admissions
	admLast  map[int64]int64           // second -> unix ms of its last admission (none: unknown)
	admN     int64                     // sum of admitted
	lapsed   int64                     // waiting counts expired (abandoned), since the store opened
	expired  int64                     // every cell with expiry <= this is gone
	latestMs int64                     // the latest unix ms an op was decided at (see latest)

	records *records

	sketch *limit.Sketch // per-client limits; nil until one is asked
	nets   *limit.Sketch // per-network limits; nil until one is asked

	// dirty collects the keys changed since the last flush; nil when the
	// store does not persist.
	dirty map[cellKey]struct{}
	// clamped counts decrements refused because the cell held nothing (a
	// count lost in a crash): they would have made a count negative.
	clamped int64
}

func newRoom(persist bool) *room {
	r := &room{
		waiting:  map[int64]map[int64]int64{},
		active:   map[int64]int64{},
		admitted: map[int64]int64{},
		admLast:  map[int64]int64{},
		records:  newRecords(),
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

// visitorKey is the persistence key of a visitor's record.
func visitorKey(v [8]byte) cellKey {
	k := cellKey{kind: kindRecord}
	for _, b := range v[:4] {
		k.exp = k.exp<<8 | int64(b)
	}
	for _, b := range v[4:] {
		k.bucket = k.bucket<<8 | int64(b)
	}
	return k
}

// visitorOf is visitorKey's inverse.
func visitorOf(k cellKey) [8]byte {
	var v [8]byte
	for i := 3; i >= 0; i-- {
		v[i] = byte(k.exp >> (8 * (3 - i)))
	}
	for i := 7; i >= 4; i-- {
		v[i] = byte(k.bucket >> (8 * (7 - i)))
	}
	return v
}

// expire drops every cell whose expiry second is at or before now,
// admissions that left the rate window, and records no longer needed.
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
			r.lapsed += max(c, 0)
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
		delete(r.admLast, sec)
		r.mark(cellKey{kind: kindAdmitted, exp: sec})
	}
	r.expireRecords(now)
	r.expired = now
}

// expireRecords forgets the records whose keep has come: it sweeps the
// record parts of the seconds since the last expiry (all of them after a
// long gap).
func (r *room) expireRecords(now int64) {
	gone := func(v [8]byte, rc record) {
		if rc.admitted {
			r.mark(visitorKey(v))
		}
	}
	if r.expired == 0 || now-r.expired >= recordShards {
		for i := range recordShards {
			r.records.sweep(i, now, gone)
		}
		return
	}
	for sec := r.expired + 1; sec <= now; sec++ {
		r.records.sweep(int(sec%recordShards), now, gone)
	}
}

// remember records what the store counted last for visitor v.
func (r *room) remember(v [8]byte, rc record, now int64) {
	old, had := r.lookup(v, now)
	if had {
		rc.keep = max(rc.keep, old.keep)
	}
	if rc.keep <= now {
		if had {
			r.records.del(v)
			if old.admitted {
				r.mark(visitorKey(v))
			}
		}
		return
	}
	r.records.put(v, rc)
	if rc.admitted || old.admitted {
		// Admitted records are kept on disk: a crash must not let a copy of
		// an admitted visitor's waiting ticket in a second time.
		r.mark(visitorKey(v))
	}
}

func (r *room) addWaiting(exp, bucket, d int64) {
	bs := r.waiting[exp]
	if d < 0 && bs[bucket] < -d {
		r.clamped++
		d = -bs[bucket]
		if d == 0 {
			return
		}
	}
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
	if d < 0 && r.active[exp] < -d {
		r.clamped++
		d = -r.active[exp]
		if d == 0 {
			return
		}
	}
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

// admittedAt counts one admission in second sec, at ms (unix ms).
func (r *room) admittedAt(sec, ms int64) {
	r.addAdmitted(sec, 1)
	r.admLast[sec] = max(r.admLast[sec], ms, sec*1000)
}

// latest returns the room's time to the millisecond for an op decided at
// nowMs: the latest moment any op was decided at, which it moves on. Ops
// are applied in the order they take the store's lock, not the order
// they were decided in: an op that waited longer than a later one must
// not see the rate window hold an admission the later one saw leave it.
// Judged at its own time, it would be refused a place the later op gave
// to a waiter behind it (a FIFO inversion).
func (r *room) latest(nowMs int64) int64 {
	r.latestMs = r.at(nowMs)
	return r.latestMs
}

// at is the room's time for a read at nowMs, as latest judges it, without
// moving the room's time on.
func (r *room) at(nowMs int64) int64 { return max(r.latestMs, nowMs, r.expired*1000) }

// rateOut returns the admissions of the second nowMs-60s falls in when
// every one of them is at least 60 s before nowMs: out of the window
// (nowMs-60s, nowMs]. The last admission of a second loaded from disk is
// not known: it is taken as the second's last millisecond.
func (r *room) rateOut(nowMs int64) int64 {
	sec := floorDiv(nowMs, 1000) - (rateWindow - 1)
	c := r.admitted[sec]
	if c <= 0 {
		return 0
	}
	last, ok := r.admLast[sec]
	if !ok {
		last = sec*1000 + 999
	}
	if last <= nowMs-60_000 {
		return c
	}
	return 0
}

// floorDiv is a / b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// stats returns the counters at nowMs (unix ms); expire must have run for
// its second.
func (r *room) stats(nowMs int64, total, perMinute int) usher.RoomStats {
	s := usher.RoomStats{
		Active:             max(r.activeN, 0),
		Waiting:            max(r.live.total, 0),
		AdmittedLastMinute: max(r.admN-r.rateOut(nowMs), 0),
	}
	s.Slots = max(0, min(int64(total)-s.Active, int64(perMinute)-s.AdmittedLastMinute))
	return s
}

// admit applies one admission decision; trusted reports whether the
// visitor's From cell may be decremented when the store has no record of
// the visitor (see Store.trusted).
func (r *room) admit(op *usher.AdmitOp, trusted bool) usher.AdmitResult {
	now := op.Now.Unix()
	r.expire(now)
	ms := r.latest(op.Now.UnixMilli())
	from := atMilli(op.From.At)
	rc, known := r.lookup(op.Visitor, now)
	tookOver := known && from < rc.at && takesOver(op, rc, from)
	if known && (from < rc.at || rc.admitted) && !tookOver {
		// A ticket older than the one counted last, or any waiting ticket
		// of a visitor the store admitted: a replay.
		return usher.AdmitResult{
			Replay:    true,
			Admitted:  rc.admitted,
			Record:    rc.public(),
			Ahead:     max(r.live.before(op.Bucket), 0),
			RoomStats: r.stats(ms, op.TotalActiveUsers, op.NewUsersPerMinute),
		}
	}
	switch {
	case known:
		// The store's record says where the visitor is counted.
		if rc.cell > now {
			r.addWaiting(rc.cell, op.Bucket, -1)
		}
	case trusted && op.From.Exp > now:
		from := op.Bucket
		if op.FromBucket != 0 {
			from = op.FromBucket
		}
		r.addWaiting(op.From.Exp, from, -1)
	}
	res := usher.AdmitResult{Ahead: max(r.live.before(op.Bucket), 0), TookOver: tookOver}
	st := r.stats(ms, op.TotalActiveUsers, op.NewUsersPerMinute)
	newcomer := op.From.At.IsZero() && !known
	limited := newcomer && op.Client.PerMinute > 0 && op.Client.Key != 0
	take := func() {
		if r.sketch == nil {
			r.sketch = limit.NewSketch()
		}
		secs := float64(op.Now.UnixNano()) / 1e9
		tiers := []limit.Tier{{Sketch: r.sketch, Key: op.Client.Key, PerMinute: op.Client.PerMinute}}
		if c := op.Client; c.NetworkPerMinute > 0 && c.NetworkKey != 0 {
			if r.nets == nil {
				r.nets = limit.NewSketch()
			}
			tiers = append(tiers, limit.Tier{Sketch: r.nets, Key: c.NetworkKey, PerMinute: c.NetworkPerMinute})
		}
		res.OverClient = !limit.TakeAll(secs, tiers...)
	}
	if limited && !op.Unproven {
		take()
	}
	res.Admitted = r.admits(op, &res, st)
	if op.Unproven && res.Admitted && limited {
		// An unproven visitor counts against its client only once it
		// takes a place.
		take()
		res.Admitted = !res.OverClient
	}
	if op.Unproven && !res.Admitted {
		// It would wait: it pays first. Nothing counted, nothing
		// remembered.
		res.Unproven, res.OverClient = true, false
		res.RoomStats = st
		return res
	}
	counted := atMilli(op.Counted)
	switch {
	case res.OverClient && op.Client.Refuse:
		// No ticket: nothing counted, nothing remembered.
	case res.Admitted:
		cell := int64(0)
		if op.ActiveExp > now {
			r.addActive(op.ActiveExp, 1)
			cell = op.ActiveExp
		}
		// In the room's latest second (as Redis counts it), rounded up to
		// the millisecond and never before the room's latest: it leaves
		// the window when that is 60 s old.
		r.admittedAt(max(now, floorDiv(ms, 1000)), max(op.Now.Add(time.Millisecond-1).UnixMilli(), ms))
		r.remember(op.Visitor, record{at: counted, cell: cell, keep: max(op.Keep, cell), admitted: true, from: from}, now)
	default:
		cell, bucket := int64(0), op.Bucket
		if res.OverClient {
			bucket = op.Client.Back
		}
		if op.WaitExp > now {
			r.addWaiting(op.WaitExp, bucket, 1)
			cell = op.WaitExp
		}
		if !newcomer {
			// A visitor is remembered from its first check-in: a visitor
			// that never comes back costs no record.
			r.remember(op.Visitor, record{at: counted, cell: cell, keep: op.Keep, from: from}, now)
		}
	}
	if rc, ok := r.lookup(op.Visitor, now); ok {
		res.Record = rc.public()
	}
	if res.OverClient && !op.Client.Refuse {
		res.Ahead = max(r.live.before(op.Client.Back), 0)
	}
	res.RoomStats = r.stats(ms, op.TotalActiveUsers, op.NewUsersPerMinute)
	return res
}

// admits reports whether op admits its visitor into the room whose
// counters are st (res: its client's standing and the waiters ahead).
func (r *room) admits(op *usher.AdmitOp, res *usher.AdmitResult, st usher.RoomStats) bool {
	switch {
	case res.OverClient:
		return false
	case op.Force:
		// Past the limits (passthrough), but an unproven visitor only into
		// a free slot.
		return !op.Unproven || st.Slots > 0
	case op.NoAdmit || st.Slots <= 0:
		return false
	case op.Joining:
		return st.Waiting == 0
	case op.Random:
		live := st.Waiting
		if op.DrawBefore != 0 {
			live = max(r.live.before(op.DrawBefore), 0)
		}
		return op.Draw*float64(live+1) < float64(st.Slots)
	}
	return res.Ahead < st.Slots
}

// renew applies one session renewal; trusted is as for admit.
func (r *room) renew(op *usher.RenewOp, trusted bool) usher.RenewResult {
	now := op.Now.Unix()
	r.expire(now)
	r.latest(op.Now.UnixMilli())
	from := atMilli(op.From.At)
	rc, known := r.lookup(op.Visitor, now)
	if op.End || op.Lapsed {
		if known && rc.admitted && (rc.cell == 0 || (op.Lapsed && rc.cell > now)) {
			// Ended already (revoked, or told lapsed), or (a lapse) still
			// counted: another ticket of the visitor renewed it.
			return usher.RenewResult{Replay: true, Record: rc.public()}
		}
		if known && rc.admitted && rc.cell > now {
			r.addActive(rc.cell, -1)
		}
		at := atMilli(op.Counted)
		if known && at <= rc.at {
			at = rc.at + 1
		}
		ended := record{at: at, keep: op.Keep, admitted: true}
		r.remember(op.Visitor, ended, now)
		return usher.RenewResult{Record: ended.public()}
	}
	if known && from < rc.at {
		return usher.RenewResult{Replay: true, Record: rc.public()}
	}
	switch {
	case known && rc.admitted:
		if rc.cell > now {
			r.addActive(rc.cell, -1)
		}
	case known:
		// Counted as a waiter last (a record older than the admission,
		// restored after a crash): its waiting cell expires by itself.
	case trusted && op.From.Exp > now:
		r.addActive(op.From.Exp, -1)
	}
	cell := int64(0)
	if op.To > now {
		r.addActive(op.To, 1)
		cell = op.To
	}
	next := record{at: atMilli(op.Counted), cell: cell, keep: max(op.Keep, cell), admitted: true, from: from}
	r.remember(op.Visitor, next, now)
	return usher.RenewResult{Record: next.public()}
}

// peek returns the live waiters ahead of bucket and the counters at now.
func (r *room) peek(now time.Time, bucket int64) (int64, usher.RoomStats) {
	r.expire(now.Unix())
	return max(r.live.before(bucket), 0), r.stats(r.latest(now.UnixMilli()), 0, 0)
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

// atMilli returns t in unix ms, 0 for the zero time.
func atMilli(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// lookup returns visitor v's record unless its keep has come: expiry
// forgets records in parts, up to recordShards seconds late, and a record
// past its keep must read as forgotten at once, as on Redis.
func (r *room) lookup(v [8]byte, now int64) (record, bool) {
	rc, ok := r.records.get(v)
	if !ok || rc.keep <= now {
		return record{}, false
	}
	return rc, true
}
