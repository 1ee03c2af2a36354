package redis

import (
	"context"
	"sort"
	"strconv"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// A room spread over shards (usher.Settings.Shards above one).
//
// Every key of a room shares one hash slot, so a room lives on one Redis
// core; a long line's work is mostly its waiters' check-ins far back, which
// move their counts to later cells (farback.go). A room spread over shards
// keeps its own keys as the *front*, which alone admits and holds the line
// up to its *serving horizon* (hz, a bucket), and counts the waiters of
// later buckets on Shards-1 *back shards*, sub-rooms of the same layout
// under hash tags of their own, chosen so that their slots are spread
// evenly over the slot space (and so over a cluster's masters when the
// slots are split evenly among them).
//
//   - A far-back check-in or new visitor whose bucket is behind the
//     horizon, by the node's view, is batched to the bucket's back shard
//     (backOf); any other is what it was: a call on the front, or a move
//     batched to it.
//   - The front admits nobody behind its horizon (admit.lua). Every bucket
//     up to the horizon is counted whole on the front, so its count of
//     those ahead of anyone it may admit is exact: the limits and the
//     order rest on the front's scripts, as on one shard.
//   - Once a ViewEvery, the node that holds the horizon lease (horizon.lua)
//     moves the horizon on while the front holds fewer waiters up to it
//     than the far-back margin of the room's longest count and 15 s of
//     admissions: each back shard marks the buckets crossing crossed and
//     hands over their live counts (cross.lua), then the front takes them
//     in and moves its horizon, once (by the horizon it moved from). A
//     back shard refuses a move of a bucket it has handed over (the node's
//     view was older than the crossing): the node applies it on the front.
//   - A holder that dies stops the horizon; the front then admits up to it
//     and waits: utilisation is lost until another node takes the lease
//     (three ViewEvery), never order or a limit.
//
// See docs/scaling.md, "A room beyond one shard".

// shardKeys are a back shard's keys (as roomKeys's first five) and the
// prefix of its visitors' record keys.
type shardKeys struct {
	keys     []string
	visitors string
	tag      string // "{<tag>}:"
}

// index returns the key of bucket b's records on a back shard (a hash,
// moves.lua): the back shard keeps its waiters' records there, by bucket,
// and hands them over with the bucket (cross.lua).
func (k *shardKeys) index(b int64) string { return k.tag + "i:" + itoa(b) }

// lookahead is how far (seconds) past now the horizon is set when the
// front holds every waiter: later than the arrivals until the next step
// (a second on), and no more, so that a surge lands on the back shards
// from two seconds after the front's line is long enough. A holder lost
// stops it: arrivals two seconds later wait for the next holder (three
// ViewEvery), while the line is short.
const lookahead = 2

// slots is the number of hash slots of Redis Cluster.
const slots = 16384

// backKeys returns the keys of a room's back shards 1..n-1. The slot
// space is cut in n equal ranges; the room's own keys are in range p, and
// back shard i's hash tag is the first of "<prefix>:<room>:b<i>.<k>" (k =
// 0, 1, ...) whose slot is in range (p + i) mod n. Every node finds the
// same tags, and a cluster of n masters serving equal ranges of slots (as
// redis-cli --cluster create makes them) holds each shard on a master of
// its own.
func backKeys(prefix, room string, n int) []shardKeys {
	p := int(keySlot(prefix+":"+room)) * n / slots
	out := make([]shardKeys, 0, n-1)
	for i := 1; i < n; i++ {
		want := (p + i) % n
		var tag string
		for k := 0; ; k++ {
			tag = prefix + ":" + room + ":b" + strconv.Itoa(i) + "." + strconv.Itoa(k)
			if int(keySlot(tag))*n/slots == want || k >= 1<<16 {
				break
			}
		}
		t := "{" + tag + "}:"
		out = append(out, shardKeys{keys: []string{t + "m", t + "l", t + "w", t + "a", t + "r"}, visitors: t + "v:", tag: t})
	}
	return out
}

// keySlot is Redis Cluster's slot of a hash tag's content: CRC16 (XMODEM)
// mod 16384.
func keySlot(tag string) uint16 {
	var crc uint16
	for i := 0; i < len(tag); i++ {
		crc ^= uint16(tag[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc % slots
}

// backOf returns the back shard (1..n-1) that counts bucket b's waiters:
// consecutive arrival seconds on different shards, so that a surge spreads
// evenly.
func backOf(b int64, n int) int {
	m := int64(n - 1)
	return 1 + int(((b%m)+m)%m)
}

// note records what op tells of its room: its far-back margin, its shards
// and the limits its horizon is kept by.
func (s *Store) note(room string, op *usher.AdmitOp, margin int64) {
	f := s.far
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rooms[room]
	if r == nil {
		r = &farRoom{}
		f.rooms[room] = r
	}
	r.margin = margin
	n := max(op.Shards, 1)
	if n != r.shards {
		r.shards, r.backs = n, nil
		if n > 1 {
			r.backs = backKeys(s.opts.KeyPrefix, room, n)
		}
		// A view of the other layout no longer answers.
		r.view = nil
	}
	r.total, r.perMinute = op.TotalActiveUsers, op.NewUsersPerMinute
	if w := time.Duration(op.WaitExp-op.Now.Unix()) * time.Second; w > r.longest {
		r.longest = w
	}
}

// behind returns the live waiters behind the horizon, by the room's last
// view (zero for a room on one shard). The caller holds f.mu.
func (r *farRoom) behind() int64 {
	if r.view == nil || r.shards < 2 {
		return 0
	}
	return r.view.behind
}

// backWaiting returns the live waiters behind room's horizon by its last
// view: a count the front's own answers leave out.
func (s *Store) backWaiting(room string) int64 {
	f := s.far
	f.mu.Lock()
	defer f.mu.Unlock()
	if r := f.rooms[room]; r != nil {
		return r.behind()
	}
	return 0
}

// readBacks reads the back shards' views and adds to front's counts (cs)
// those of the buckets behind the front's horizon: a bucket up to it the
// front counts whole (its back counts, handed over, stay until they
// expire). It returns the counts of the whole line, in order.
func (s *Store) readBacks(ctx context.Context, front *roomView, cs []count, backs []shardKeys, now time.Time) ([]count, error) {
	f := s.far
	var up int64
	for _, c := range cs {
		if front.hz == 0 || c.bucket <= front.hz {
			up += max(c.n, 0)
		}
	}
	front.front = up
	front.back = nil
	for _, b := range backs {
		args := append(writeArgs(make([]string, 0, 6), now, 0, &s.opts), itoa(int64(f.opts.MaxPages)))
		f.views.Add(1)
		v, bc, err := parseView(s.run(ctx, s.scripts.view, b.keys, args))
		if err != nil {
			return nil, err
		}
		if !v.usable {
			front.usable = false
		}
		for _, c := range bc {
			if c.bucket > front.hz && c.n > 0 {
				front.back = append(front.back, c)
			}
		}
	}
	sort.Slice(front.back, func(i, j int) bool { return front.back[i].bucket < front.back[j].bucket })
	for _, c := range front.back {
		front.behind += c.n
	}
	front.stats.Waiting += front.behind
	return mergeCounts(cs, front.back), nil
}

// mergeCounts merges two lists of counts in bucket order.
func mergeCounts(a, b []count) []count {
	out := make([]count, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && a[i].bucket <= b[j].bucket):
			out = append(out, a[i])
			i++
		default:
			out = append(out, b[j])
			j++
		}
	}
	return out
}

// StepHorizon moves room's serving horizon on when this node holds (or
// takes) the horizon lease and the front holds too short a line (see the
// top of this file). The Store does it by itself every FarBack.ViewEvery
// unless FarBack.Manual. It reports whether the horizon moved.
func (s *Store) StepHorizon(ctx context.Context, room string, now time.Time) bool {
	f := s.far
	f.mu.Lock()
	r := f.rooms[room]
	if r == nil || r.shards < 2 || f.opts.Off {
		f.mu.Unlock()
		return false
	}
	backs := r.backs
	want := FarMargin(r.total, r.perMinute, r.longest) + int64(r.perMinute)/4 + 1
	f.mu.Unlock()
	v := s.readView(ctx, room, now)
	if v == nil || !v.exists {
		return false
	}
	ms := now.UnixMilli()
	if v.hl != s.node && v.hle > ms {
		return false // another node holds the lease
	}
	upto, acc, all := v.hz, v.front, true
	for k, c := range v.back {
		if acc >= want || k >= maxCross || acc-v.front >= maxCrossWaiters {
			all = false
			break
		}
		acc += c.n
		upto = c.bucket
	}
	if v.hz == 0 || (all && acc < want) {
		upto = max(upto, now.Unix()+lookahead)
	}
	from := v.hz
	var cells, recs, ids []string
	if upto > from {
		for i, b := range backs {
			keys := append(make([]string, 0, 8), b.keys...)
			for _, c := range v.back {
				if c.bucket <= upto && backOf(c.bucket, len(backs)+1) == i+1 {
					keys = append(keys, b.index(c.bucket))
				}
			}
			args := append(writeArgs(make([]string, 0, 7), now, 0, &s.opts), itoa(from), itoa(upto))
			f.crossings.Add(1)
			got, err := parseCross(s.run(ctx, s.scripts.cross, keys, args))
			if err != nil {
				s.opts.Logger.Warn("redis: a back shard did not hand its buckets over; the horizon waits", "room", room, "err", err)
				return false
			}
			cells = append(cells, got.counts...)
			ids = append(ids, got.ids...)
			recs = append(recs, got.records...)
		}
	}
	rk, vp, known := s.room(room, now)
	keys := append(make([]string, 0, 5+len(ids)), rk[:5]...)
	for _, id := range ids {
		keys = append(keys, vp+id)
	}
	args := append(writeArgs(make([]string, 0, 12+len(cells)+len(recs)), now, known, &s.opts),
		itoa(s.node), itoa((3 * f.opts.ViewEvery).Milliseconds()), itoa(from), itoa(upto), flag(upto > from),
		itoa(int64(len(cells)/3)))
	args = append(append(args, cells...), recs...)
	var out [5]int64
	if err := ints("horizon", s.run(ctx, s.scripts.horizon, keys, args), out[:]); err != nil {
		s.opts.Logger.Warn("redis: the serving horizon did not move", "room", room, "err", err)
		return false
	}
	s.remember(room, now, out[2], out[3])
	if out[4] == 1 {
		f.horizons.Add(1)
		return true
	}
	return false
}

// maxCross and maxCrossWaiters bound what one step takes in: its back
// buckets, and its waiters (past the bucket that reaches it), so that a
// step after a stall (the front drained) does not hold the front for long
// (a waiter's record is a SET there); the next steps take the rest.
const (
	maxCross        = 64
	maxCrossWaiters = 16384
)

// handOver is what a back shard hands over (cross.lua), as horizon.lua's
// arguments: per count, its cell's expiry, its bucket and the count; per
// record, the visitor's id (8 bytes) and the packed record.
type handOver struct {
	counts, ids, records []string
}

// parseCross reads cross.lua's answer.
func parseCross(res valkey.ValkeyResult) (h handOver, err error) {
	if err := res.Error(); err != nil {
		return h, fail("cross", err)
	}
	arr, err := res.ToArray()
	if err != nil || len(arr) < 3 {
		return h, malformed("cross", "%d values (%v)", len(arr), err)
	}
	n, err := arr[2].ToInt64()
	if err != nil || n < 0 || 3+3*n > int64(len(arr)) || (int64(len(arr))-3-3*n)%2 != 0 {
		return h, malformed("cross", "%d counts in %d values (%v)", n, len(arr), err)
	}
	for i := 3; i < 3+3*int(n); i++ {
		x, err := arr[i].ToInt64()
		if err != nil {
			return h, malformed("cross", "value %d: %v", i, err)
		}
		h.counts = append(h.counts, itoa(x))
	}
	for i := 3 + 3*int(n); i < len(arr); i += 2 {
		id, err1 := arr[i].ToString()
		rec, err2 := arr[i+1].ToString()
		if err1 != nil || err2 != nil || len(id) != 8 {
			return h, malformed("cross", "record %d: %d bytes (%v, %v)", i, len(id), err1, err2)
		}
		h.ids = append(h.ids, id)
		h.records = append(h.records, rec)
	}
	return h, nil
}

// horizonLoop steps the horizon of every room spread over shards this
// node has seen, every ViewEvery, until stop.
func (s *Store) horizonLoop() {
	f := s.far
	defer close(f.hdone)
	t := time.NewTicker(f.opts.ViewEvery)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
		f.mu.Lock()
		var rooms []string
		for room, r := range f.rooms {
			if r.shards > 1 {
				rooms = append(rooms, room)
			}
		}
		f.mu.Unlock()
		for _, room := range rooms {
			s.StepHorizon(context.Background(), room, time.Now())
		}
	}
}
