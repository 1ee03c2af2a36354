package redis

import (
	"context"
	"encoding/binary"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// Check-ins far back in a line.
//
// Most of a long line is far from its front: nothing a waiter there does
// can change who goes in next, and nothing the front does can reach it
// before its next check-in. The same holds for a new visitor joining the
// back of such a line. Such a check-in still moves the waiter's count
// to a later cell (else the waiter would lapse), but it need not make a
// call of its own: the node answers it from its view of the room (the
// counters and the live waiters per bucket, read with one script a
// second) and appends the move to the room's batch, which one script
// applies every FarBack.Flush (or at FarBack.MaxBatch moves) with the same
// record checks as an admission (a new visitor's count is added, as the
// admission script adds it). Near the front, admissions, renewals and
// every other kind of decision stay one call each, as before: only the front admits, so the limits are exactly as exact as
// they were. See docs/scaling.md, "Check-ins far back in the line".
//
// What a late or lost batch costs: the waiter's previous count still
// counts it until its cell expires, a refresh interval and a grace after
// its previous check-in, so a batch applied within that (FarBack.Flush
// against seconds) changes nothing anyone sees. A batch lost (the node
// dies, the call fails) lets that count lapse; the waiter's next check-in
// brings a ticket newer than its record, which the store believes and
// counts again in its bucket: its place is kept. Meanwhile the line shows
// one waiter fewer far back, which no one near the front is affected by.

// FarBack configures check-ins far back in a line (see Options.FarBack).
type FarBack struct {
	// Off makes every check-in one script call of its own.
	Off bool
	// Flush is how often a room's batch of moves is applied (zero: 100ms).
	Flush time.Duration
	// MaxBatch is the most moves one call applies; a batch that reaches it
	// is applied at once (zero: 512).
	MaxBatch int
	// ViewEvery is how often a node reads a room's view while check-ins
	// use it (zero: 1s). A view older than twice that is not used.
	ViewEvery time.Duration
	// MaxPages bounds a view: the pages of 64 buckets' counts it holds
	// (zero: 4096, 262,144 arrival seconds, three days; a node then holds
	// at most 4 MB of a room's view). A room whose line spreads over more
	// answers every check-in with a call of its own.
	MaxPages int
	// Manual, for tests: no goroutine; a stale view is read by the call
	// that finds it stale, and batches are applied by FlushMoves.
	Manual bool
}

// maxPending is the most moves a room's batch holds before its far-back
// check-ins go back to a call each (the batches are falling behind).
const maxPending = 8192

// farBack is a Store's state of far-back check-ins.
type farBack struct {
	opts  FarBack
	mu    sync.Mutex
	rooms map[string]*farRoom
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
	hdone chan struct{} // the horizon loop's (shards.go)

	answered, moved, replays, dropped, flushes, views atomic.Int64
	// A room spread over shards: moves a back shard refused, horizon
	// steps that moved it, back shards' crossing calls.
	backMoved, refused, horizons, crossings atomic.Int64
}

// farRoom is what a node holds of one room for far-back check-ins.
type farRoom struct {
	view       *roomView
	refreshing bool
	// margin is the least number of live waiters ahead of a check-in,
	// as the room's last admission op worked it out from its limits, for
	// which an early check-in (Peek) is answered from the view.
	margin int64
	// waiting is the room's live waiters as this node last learnt them
	// (an answer's or a view's); no view is read while it is below the
	// margin: nobody is far back in a short line, and a room's view costs
	// a call a second.
	waiting int64
	// pending are the moves to apply, per shard: 0 the room's own (the
	// front), i its back shard i.
	pending [][]move
	// broken is when the room's far-back check-ins may use batches again
	// after a batch failed (unix ms of the op clock).
	broken int64
	// A room spread over shards (shards.go): how many, its back shards'
	// keys, and the limits its serving horizon is kept by (the last op's,
	// with the longest count any op ran for in the room).
	shards           int
	backs            []shardKeys
	total, perMinute int
	longest          time.Duration
}

// queued returns the moves pending over all shards.
func (r *farRoom) queued() (n int) {
	for _, p := range r.pending {
		n += len(p)
	}
	return n
}

// move is one far-back check-in, to be applied.
type move struct {
	visitor string // the record's key
	index   string // on a back shard, its bucket's index of records
	op      usher.AdmitOp
}

// roomView is a node's view of a room at a moment.
type roomView struct {
	at     time.Time // the op time it was read at
	exists bool
	stats  usher.RoomStats
	born   int64
	rec    int64
	// usable is false when the line spreads over more buckets than
	// FarBack.MaxPages holds.
	usable bool
	// A room spread over shards: the front's serving horizon (0: none),
	// the horizon lease's holder and end (unix ms), the live waiters the
	// front holds up to the horizon, and the back shards' counts of the
	// buckets behind it, in order (see shards.go).
	hz, hl, hle int64
	front       int64
	back        []count
	behind      int64 // the waiters in back, added up
	// buckets are the buckets with live waiters, in order, and before
	// the live waiters in the buckets before each.
	buckets []int64
	before  []int64
	total   int64
}

// ahead returns the live waiters in buckets before b.
func (v *roomView) ahead(b int64) int64 {
	i := sort.Search(len(v.buckets), func(i int) bool { return v.buckets[i] >= b })
	if i == len(v.buckets) {
		return v.total
	}
	return v.before[i]
}

func newFarBack(o FarBack) *farBack {
	if o.Flush <= 0 {
		o.Flush = 100 * time.Millisecond
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 512
	}
	if o.ViewEvery <= 0 {
		o.ViewEvery = time.Second
	}
	if o.MaxPages <= 0 {
		o.MaxPages = 4096
	}
	return &farBack{opts: o, rooms: map[string]*farRoom{}, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), hdone: make(chan struct{})}
}

// FarBackStats are a Store's counts of far-back check-ins since Open.
type FarBackStats struct {
	// Answered counts check-ins answered from a view, with no call of
	// their own (early ones included).
	Answered int64
	// Moved counts the moves batches applied; Replays the moves a batch
	// found to be replays (a copied ticket's), which changed nothing.
	Moved, Replays int64
	// Dropped counts moves lost with a batch that failed.
	Dropped int64
	// Flushes counts the batch calls, Views the view reads.
	Flushes, Views int64
	// A room spread over shards: BackMoved counts the moves back shards
	// applied (of Moved), Refused those a back shard refused as its front
	// held their bucket by then (applied on the front), Horizons the
	// horizon steps that moved a horizon, Crossings the back shards'
	// hand-over calls.
	BackMoved, Refused, Horizons, Crossings int64
}

// FarBackStats returns the Store's counts of far-back check-ins.
func (s *Store) FarBackStats() FarBackStats {
	f := s.far
	return FarBackStats{Answered: f.answered.Load(), Moved: f.moved.Load(), Replays: f.replays.Load(),
		Dropped: f.dropped.Load(), Flushes: f.flushes.Load(), Views: f.views.Load(),
		BackMoved: f.backMoved.Load(), Refused: f.refused.Load(), Horizons: f.horizons.Load(), Crossings: f.crossings.Load()}
}

// farMargin returns the fewest live waiters ahead of a check-in for which
// it is far back (FarMargin, by op's limits and the time its count is to
// run: its interval and grace).
func farMargin(op *usher.AdmitOp) int64 {
	return FarMargin(op.TotalActiveUsers, op.NewUsersPerMinute, time.Duration(op.WaitExp-op.Now.Unix())*time.Second)
}

// FarMargin returns the fewest live waiters ahead of a check-in for which
// it is far back, in a room of total places admitting perMinute a minute,
// its count to run for wait: every place, and every admission the rate
// allows in two of its intervals and two seconds more (a view up to two
// seconds old). No such waiter can be admitted at this check-in, however
// many places have freed since the view was read, nor be reached by the
// front before its next check-in.
func FarMargin(total, perMinute int, wait time.Duration) int64 {
	iv := int64(wait / time.Second)
	minutes := (2*iv + 2 + 59) / 60
	return int64(total) + int64(perMinute)*max(minutes, 1)
}

// FarEligible reports whether op is one a view may answer: a waiting
// ticket's check-in, or a new visitor, in a FIFO line that moves (not a
// pre-queue, where a shuffled place is promised exactly, nor queue_all),
// that cannot be admitted by its kind (nothing forced, drawn, joining,
// unproven or limited per client), with a checked-in waiter's count live
// for a while yet.
func FarEligible(op *usher.AdmitOp) bool {
	now := op.Now.Unix()
	if op.WaitExp <= now || op.NoAdmit || op.Random || op.Joining || op.FromBucket != 0 || op.Force || op.Unproven || op.Client.Key != 0 {
		return false
	}
	if op.From.At.IsZero() {
		// A new visitor: no record to check, a count to add.
		return op.From.Exp == 0 && op.TakeOver.IsZero()
	}
	return op.From.Exp >= now+2 && op.Counted.After(op.From.At)
}

// farAdmit answers op from the room's view when it is a check-in far back
// in the line, and appends its move to the room's batch.
func (s *Store) farAdmit(ctx context.Context, room string, op *usher.AdmitOp) (usher.AdmitResult, bool) {
	f := s.far
	if f.opts.Off {
		return usher.AdmitResult{}, false
	}
	margin := farMargin(op)
	// Its limits still tell early check-ins (Peek) which are far back, and
	// the horizon of a room spread over shards how far it is kept.
	s.note(room, op, margin)
	if !FarEligible(op) {
		return usher.AdmitResult{}, false
	}
	v := s.view(ctx, room, op.Now, margin)
	if v == nil {
		return usher.AdmitResult{}, false
	}
	ahead := v.ahead(op.Bucket)
	if ahead < margin {
		return usher.AdmitResult{}, false
	}
	_, vp, _ := s.room(room, op.Now)
	f.mu.Lock()
	r := f.rooms[room]
	if r.queued() >= maxPending || op.Now.UnixMilli() < r.broken {
		f.mu.Unlock()
		return usher.AdmitResult{}, false
	}
	// Behind the serving horizon, the bucket's back shard counts it.
	shard, index := 0, ""
	if r.shards > 1 && len(r.backs) == r.shards-1 && v.hz > 0 && op.Bucket > v.hz {
		shard = backOf(op.Bucket, r.shards)
		b := &r.backs[shard-1]
		vp, index = b.visitors, b.index(op.Bucket)
	}
	for len(r.pending) <= shard {
		r.pending = append(r.pending, nil)
	}
	r.pending[shard] = append(r.pending[shard], move{visitor: visitorKey(vp, op.Visitor), index: index, op: *op})
	full := len(r.pending[shard]) >= f.opts.MaxBatch
	f.mu.Unlock()
	if full && !f.opts.Manual {
		select {
		case f.wake <- struct{}{}:
		default:
		}
	}
	f.answered.Add(1)
	return usher.AdmitResult{Ahead: ahead, RoomStats: v.stats}, true
}

// farPeek answers an early check-in from the room's view when it is far
// back, by the margin of the room's last admission op (an early check-in
// changes nothing, and its place may be up to a view's age old).
func (s *Store) farPeek(ctx context.Context, room string, now time.Time, bucket int64) (int64, usher.RoomStats, bool) {
	f := s.far
	if f.opts.Off {
		return 0, usher.RoomStats{}, false
	}
	f.mu.Lock()
	r := f.rooms[room]
	margin := int64(0)
	if r != nil {
		margin = r.margin
	}
	f.mu.Unlock()
	if margin <= 0 {
		return 0, usher.RoomStats{}, false
	}
	v := s.view(ctx, room, now, 0)
	if v == nil {
		return 0, usher.RoomStats{}, false
	}
	ahead := v.ahead(bucket)
	if ahead < margin {
		return 0, usher.RoomStats{}, false
	}
	f.answered.Add(1)
	st := v.stats
	st.Slots = 0
	return ahead, st, true
}

// view returns a usable view of room at now, or nil. A view older than
// ViewEvery is read again: by this call in Manual mode, else in the
// background while the old one serves up to twice ViewEvery. margin, when
// above zero, is recorded as the room's far-back margin.
func (s *Store) view(ctx context.Context, room string, now time.Time, margin int64) *roomView {
	f := s.far
	f.mu.Lock()
	r := f.rooms[room]
	if r == nil {
		r = &farRoom{}
		f.rooms[room] = r
	}
	if margin > 0 {
		r.margin = margin
	}
	v := r.view
	stale := v == nil || now.Sub(v.at) >= f.opts.ViewEvery || v.at.After(now.Add(f.opts.ViewEvery))
	read := stale && !r.refreshing && r.waiting >= r.margin && r.margin > 0
	if read {
		r.refreshing = true
	}
	f.mu.Unlock()
	if read {
		if f.opts.Manual {
			v = s.readView(ctx, room, now)
		} else {
			go s.readView(context.WithoutCancel(ctx), room, now)
		}
	}
	if v == nil || !v.usable || !v.exists || now.Sub(v.at) >= 2*f.opts.ViewEvery || v.at.After(now.Add(f.opts.ViewEvery)) {
		return nil
	}
	return v
}

// readView reads room's view at now with one script call and keeps it
// (nil when the call fails).
func (s *Store) readView(ctx context.Context, room string, now time.Time) *roomView {
	f := s.far
	rk, _, known := s.room(room, now)
	f.mu.Lock()
	backs := f.rooms[room].backs
	f.mu.Unlock()
	args := append(writeArgs(make([]string, 0, 6), now, known, &s.opts), itoa(int64(f.opts.MaxPages)))
	f.views.Add(1)
	v, cs, err := parseView(s.run(ctx, s.scripts.view, rk[:5], args))
	if err == nil && len(backs) > 0 && v.exists {
		cs, err = s.readBacks(ctx, v, cs, backs, now)
	}
	if err == nil {
		v.index(cs)
	}
	f.mu.Lock()
	r := f.rooms[room]
	r.refreshing = false
	if err == nil {
		v.at = now
		r.view = v
		r.waiting = v.stats.Waiting
	}
	f.mu.Unlock()
	if err != nil {
		return nil
	}
	if v.exists {
		s.remember(room, now, v.born, v.rec)
	}
	return v
}

// count is a bucket's live waiters.
type count struct{ bucket, n int64 }

// viewHead is the number of values view.lua answers before its pages.
const viewHead = 13

// parseView reads view.lua's answer: the view (not yet indexed) and its
// counts per bucket, in order.
func parseView(res valkey.ValkeyResult) (*roomView, []count, error) {
	if err := res.Error(); err != nil {
		return nil, nil, fail("view", err)
	}
	arr, err := res.ToArray()
	if err != nil || len(arr) < viewHead {
		return nil, nil, malformed("view", "%d values, want at least %d (%v)", len(arr), viewHead, err)
	}
	var head [viewHead]int64
	for i := range head {
		if head[i], err = arr[i].ToInt64(); err != nil {
			return nil, nil, malformed("view", "value %d: %v", i, err)
		}
	}
	v := &roomView{exists: head[0] == 1, born: head[4], rec: head[5], usable: head[8] >= 0,
		stats: usher.RoomStats{Active: head[1], Waiting: head[2], AdmittedLastMinute: head[3]}}
	v.hz, v.hl, v.hle = head[9], head[10], head[11]
	if !v.exists || head[6] == 0 || head[8] <= 0 {
		return v, nil, nil
	}
	base := head[7]
	if int64(len(arr)) != viewHead+2*head[8] {
		return nil, nil, malformed("view", "%d values for %d pages", len(arr), head[8])
	}
	var cs []count
	for k := viewHead; k < len(arr); k += 2 {
		field, err := arr[k].ToInt64()
		if err != nil {
			return nil, nil, malformed("view", "page field: %v", err)
		}
		page, err := arr[k+1].ToString()
		if err != nil || len(page) != 4*fan {
			return nil, nil, malformed("view", "page %d: %d bytes", field, len(page))
		}
		tree, first := field%2, (field/16)*fan
		for slot := range int64(fan) {
			n := int64(int32(binary.BigEndian.Uint32([]byte(page[4*slot : 4*slot+4]))))
			if n == 0 {
				continue
			}
			b := base + first + slot
			if tree == 1 {
				b = base - (first + slot) - 1
			}
			cs = append(cs, count{b, n})
		}
	}
	sort.Slice(cs, func(i, j int) bool { return cs[i].bucket < cs[j].bucket })
	return v, cs, nil
}

// index makes the view's prefix sums of cs, the live waiters per bucket in
// order.
func (v *roomView) index(cs []count) {
	v.buckets = make([]int64, len(cs))
	v.before = make([]int64, len(cs))
	v.total = 0
	for i, c := range cs {
		v.buckets[i], v.before[i] = c.bucket, v.total
		v.total += max(c.n, 0)
	}
}

// learn notes room's live waiters from an answer of the store: a view is
// read only while the line may be long enough for anyone to be far back.
func (s *Store) learn(room string, waiting int64) {
	f := s.far
	if f.opts.Off {
		return
	}
	f.mu.Lock()
	r := f.rooms[room]
	if r == nil {
		r = &farRoom{}
		f.rooms[room] = r
	}
	r.waiting = waiting + r.behind()
	f.mu.Unlock()
}

// fan is the counts per page of the waiting trees (FAN in the scripts).
const fan = 64

// FlushMoves applies every room's pending far-back moves now. The Store
// does it by itself every FarBack.Flush unless FarBack.Manual.
func (s *Store) FlushMoves(ctx context.Context) {
	f := s.far
	f.mu.Lock()
	type batch struct {
		room  string
		shard int
		moves []move
	}
	var all []batch
	for room, r := range f.rooms {
		for shard, p := range r.pending {
			if len(p) > 0 {
				all = append(all, batch{room, shard, p})
				r.pending[shard] = nil
			}
		}
	}
	f.mu.Unlock()
	for _, b := range all {
		for i := 0; i < len(b.moves); i += f.opts.MaxBatch {
			s.applyMoves(ctx, b.room, b.shard, b.moves[i:min(len(b.moves), i+f.opts.MaxBatch)])
		}
	}
}

// applyMoves applies one batch of a room's moves on one of its shards (0:
// its own keys) with one script call. A back shard refuses the moves of
// buckets its front has taken over since the node routed them: they are
// applied on the front.
func (s *Store) applyMoves(ctx context.Context, room string, shard int, moves []move) {
	f := s.far
	now := moves[0].op.Now
	for _, m := range moves[1:] {
		if m.op.Now.After(now) {
			now = m.op.Now
		}
	}
	rk, vp, known := s.room(room, now)
	if shard > 0 {
		f.mu.Lock()
		b := f.rooms[room].backs[shard-1]
		f.mu.Unlock()
		rk, known = b.keys, 0
	}
	keys := append(make([]string, 0, 5+2*len(moves)), rk[:5]...)
	args := writeArgs(make([]string, 0, 5+8*len(moves)), now, known, &s.opts)
	for _, m := range moves {
		op := &m.op
		keys = append(keys, m.visitor)
		if shard > 0 {
			keys = append(keys, m.index)
		}
		args = append(args, itoa(op.Bucket), itoa(op.From.Exp), itoa(atMilli(op.From.At)), itoa(op.WaitExp),
			itoa(atMilli(op.Counted)), itoa(op.Keep), itoa(atMilli(op.TakeOver)), itoa(op.TakeOverCell))
	}
	f.flushes.Add(1)
	v, refused, err := parseMoves(s.run(ctx, s.scripts.moves, keys, args), len(moves))
	if err != nil {
		f.dropped.Add(int64(len(moves)))
		f.mu.Lock()
		if r := f.rooms[room]; r != nil {
			r.broken = now.Add(f.opts.ViewEvery).UnixMilli()
		}
		f.mu.Unlock()
		s.opts.Logger.Warn("redis: a batch of far-back check-ins failed; their waiters are counted again at their next check-in",
			"room", room, "moves", len(moves), "err", err)
		return
	}
	f.moved.Add(v[0])
	f.replays.Add(v[1])
	if shard == 0 {
		s.remember(room, now, v[2], v[3])
		return
	}
	f.backMoved.Add(v[0])
	if len(refused) > 0 {
		f.refused.Add(int64(len(refused)))
		front := make([]move, 0, len(refused))
		for _, i := range refused {
			m := moves[i]
			m.visitor, m.index = visitorKey(vp, m.op.Visitor), ""
			front = append(front, m)
		}
		s.applyMoves(ctx, room, 0, front)
	}
}

// parseMoves reads moves.lua's answer: its counts and the moves it
// refused (0-based).
func parseMoves(res valkey.ValkeyResult, n int) (v [4]int64, refused []int, err error) {
	if err := res.Error(); err != nil {
		return v, nil, fail("moves", err)
	}
	arr, err := res.ToArray()
	if err != nil || len(arr) < 4 || len(arr) > 4+n {
		return v, nil, malformed("moves", "%d values for %d moves (%v)", len(arr), n, err)
	}
	for i := range arr {
		x, err := arr[i].ToInt64()
		if err != nil {
			return v, nil, malformed("moves", "value %d: %v", i, err)
		}
		if i < 4 {
			v[i] = x
			continue
		}
		if x < 1 || x > int64(n) {
			return v, nil, malformed("moves", "refused move %d of %d", x, n)
		}
		refused = append(refused, int(x-1))
	}
	return v, refused, nil
}

// flushLoop applies the batches every Flush, or when one is full, until
// stop; then once more.
func (s *Store) flushLoop() {
	f := s.far
	defer close(f.done)
	t := time.NewTicker(f.opts.Flush)
	defer t.Stop()
	for {
		select {
		case <-f.stop:
			s.FlushMoves(context.Background())
			return
		case <-t.C:
		case <-f.wake:
		}
		s.FlushMoves(context.Background())
	}
}
