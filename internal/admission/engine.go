// Package admission is usher's admission engine: given a room, the
// visitor's ticket and the time, it decides whether the visitor goes in or
// waits, and what the ticket says next. It keeps no per-visitor state; the
// room's aggregate counters sit behind usher.Store, and every decision that
// changes them is one Store call.
//
// The engine holds invariants 1-7 of DESIGN.md on one node with any store
// that implements the Store contract; see docs/admission.md.
package admission

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/usherhq/usher"
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// FlushInterval batches admitted visitors' activity: zero applies each
	// renewal to the store at once (right for the embedded store, where it
	// is a memory write); a positive interval sends one Touch per room per
	// interval (shared stores), and active cells are kept that much longer
	// so that late counting never lets a room overshoot.
	FlushInterval time.Duration
	// Rand returns random 64-bit values for visitor ids and jitter (nil: a
	// generator seeded from crypto/rand). Tests pass a seeded one.
	Rand func() uint64
	// Logger receives flush errors (nil: slog.Default()).
	Logger *slog.Logger
	// FailOpen admits new visitors, uncounted, while the store cannot be
	// reached; otherwise (fail closed) they wait. See failDecision.
	FailOpen bool
}

// Engine decides admissions. It is safe for concurrent use.
type Engine struct {
	store usher.Store
	opts  Options
	slack int64 // seconds an active cell outlives its session

	brk breaker

	mu      sync.Mutex
	rng     func() uint64
	pending map[string]map[[8]byte]usher.Move // room -> visitor -> move
}

// New returns an engine over store.
func New(store usher.Store, opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	rng := opts.Rand
	if rng == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:])
		r := rand.New(rand.NewChaCha8(seed))
		rng = r.Uint64
	}
	e := &Engine{
		store:   store,
		opts:    opts,
		rng:     rng,
		pending: map[string]map[[8]byte]usher.Move{},
	}
	e.brk.log = opts.Logger
	if opts.FlushInterval > 0 {
		e.slack = int64((opts.FlushInterval + time.Second - 1) / time.Second)
	}
	return e
}

func (e *Engine) random() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.rng()
}

// checkInAfter is how long a waiter waits before its next check-in: the
// refresh interval plus its jitter, rounded to the whole second (at least
// one). Pages refresh in whole seconds (meta refresh, the JSON's
// refreshIntervalSeconds), so a fraction would only be rounded up there and
// make every waiter late.
func checkInAfter(refresh, jitter time.Duration) time.Duration {
	return max((refresh + jitter).Round(time.Second), time.Second)
}

// nearFront reports whether a FIFO waiter is likely to go in within one
// refresh interval: fewer people ahead than the free slots plus the
// admissions expected during the interval.
func nearFront(res usher.AdmitResult, s *usher.Settings) bool {
	soon := float64(res.Slots) + drainRate(res, s)*s.RefreshInterval.Minutes()
	return float64(res.Ahead) < soon
}

// Grace is how long after its next check-in is due a waiter still counts
// as live: the page's own rounding and load time. A waiter who closed the
// tab stops holding a place at most RefreshInterval + jitter + Grace after
// its last check-in.
func Grace(refresh time.Duration) time.Duration { return time.Second + refresh/4 }

// MaxJitter is the largest offset, either way, on a waiter's refresh
// interval.
func MaxJitter(refresh time.Duration) time.Duration { return refresh / 10 }

// Decide returns the decision for a visitor of room holding ticket t (nil
// when the visitor has none, or it did not open) at now.
func (e *Engine) Decide(ctx context.Context, room *usher.Room, t *usher.Ticket, now time.Time) (usher.Decision, error) {
	sched := room.At(now)
	s := &sched.Settings
	base := usher.Decision{Settings: sched.Settings, Phase: sched.Phase, Event: sched.Event, QueueAll: s.QueueAll}
	if s.Suspended {
		base.Outcome = usher.Pass
		return base, nil
	}
	if ss := sessionSettings(room, s, t, now); ss != nil {
		return e.keep(ctx, room.ID, ss, *t, now, base)
	}
	if s.QueueingMethod == usher.Reject && sched.Phase != usher.Prequeue {
		base.Outcome = usher.Turn
		return base, nil
	}
	tk, from := e.waiter(t, now, &sched)
	refresh := checkInAfter(s.RefreshInterval, tk.Jitter)
	next := now.Add(refresh)
	admittedTk := tk
	admittedTk.State = usher.Admitted
	admittedTk.AdmittedAt = now
	admittedTk.CountedAt = now
	admittedTk.NextCheckIn = time.Time{}
	admittedTk.DrewAt = time.Time{}
	activeExp := admittedTk.SessionEnd(s).Unix() + e.slack
	admittedTk.Cell = activeExp

	op := usher.AdmitOp{
		Now:               now,
		TotalActiveUsers:  s.TotalActiveUsers,
		NewUsersPerMinute: s.NewUsersPerMinute,
		SessionDuration:   s.SessionDuration,
		Bucket:            tk.Bucket(),
		From:              from,
		WaitExp:           usher.CeilSecond(next.Add(Grace(s.RefreshInterval))).Unix(),
		ActiveExp:         activeExp,
		// Nobody new goes in before the event starts.
		NoAdmit: s.QueueAll || sched.Phase == usher.Prequeue,
		Force:   s.QueueingMethod == usher.Passthrough && !s.QueueAll && sched.Phase != usher.Prequeue,
	}
	if s.QueueingMethod == usher.Random && !op.NoAdmit {
		if drewIn(tk.DrewAt, now, s.RefreshInterval) {
			op.NoAdmit = true // one draw per window: reloading gains nothing
		} else {
			op.Random = true
			op.Draw = Draw(tk.VisitorID, window(now, s.RefreshInterval))
			tk.DrewAt = now.Truncate(time.Millisecond)
		}
	}
	if !e.brk.allow(now) {
		return e.failDecision(base, tk, t, s, now), nil
	}
	res, err := e.store.Admit(ctx, room.ID, op)
	e.brk.result(now, err)
	if err != nil {
		if usher.ErrorCode(err) == usher.EUnavailable {
			return e.failDecision(base, tk, t, s, now), nil
		}
		return usher.Decision{}, err
	}
	d := base
	d.Stats = res.RoomStats
	d.TicketChanged = true
	if res.Admitted {
		d.Outcome = usher.Admit
		d.NewlyAdmitted = true
		d.Ticket = admittedTk
		return d, nil
	}
	if sched.Phase == usher.NoEvent || sched.Phase == usher.Running {
		if s.QueueingMethod != usher.Random && nearFront(res, s) {
			// Its turn is likely within a refresh interval: check in twice
			// as often, so a place freed for it waits half as long.
			refresh = checkInAfter(s.RefreshInterval/2, tk.Jitter/2)
			next = now.Add(refresh)
		}
	}
	tk.CountedAt = now.Truncate(time.Millisecond)
	tk.Cell = op.WaitExp
	tk.NextCheckIn = next
	d.Outcome = usher.Wait
	d.Ticket = tk
	d.Position = res.Ahead + 1
	d.RefreshAfter = refresh
	switch {
	case sched.Phase == usher.Prequeue:
		d.WaitKnown, d.EstimatedWait = true, sched.Event.Start.Sub(now)
	case s.QueueingMethod == usher.Random:
		d.WaitKnown, d.WaitLow, d.EstimatedWait, d.WaitHigh = estimateRandom(res, s)
	case s.QueueAll:
		// Nobody is let in until the operator lifts queue_all.
	default:
		d.WaitKnown, d.EstimatedWait = estimate(res, s, refresh)
	}
	return d, nil
}

// sessionSettings returns the settings under which t holds a session at
// now: the ones in force, or, when an event has ended or begun since the
// visitor was admitted, the ones it was admitted under (a session is never
// cut short by a change of schedule); nil when t holds no session.
func sessionSettings(room *usher.Room, s *usher.Settings, t *usher.Ticket, now time.Time) *usher.Settings {
	if t == nil || t.State != usher.Admitted {
		return nil
	}
	if t.SessionValid(s, now) {
		return s
	}
	if at := room.At(t.AdmittedAt).Settings; t.SessionValid(&at, now) {
		return &at
	}
	return nil
}

// MaxAbsence is how long a waiter may stay away (not check in) and still
// keep its place; after that its ticket counts as a new visitor's. Without
// it, a ticket kept from an earlier queue (or an earlier event) would jump
// to the front of a later one.
func MaxAbsence(refresh time.Duration) time.Duration { return max(10*time.Minute, 10*refresh) }

// waiter returns the ticket a visitor waits with (its own while it is a
// sane waiting ticket, else a new one arriving now) and the waiting cell it
// is counted in. A visitor who arrives while an event's pre-queue is open
// gets its place at the start: shuffled, or by arrival.
func (e *Engine) waiter(t *usher.Ticket, now time.Time, sched *usher.Schedule) (usher.Ticket, usher.Cell) {
	if t != nil && t.State == usher.Waiting && !t.ArrivedAt.After(now.Add(time.Minute)) &&
		now.Sub(t.CountedAt) <= MaxAbsence(sched.RefreshInterval) {
		return *t, usher.Cell{Exp: t.Cell, At: t.CountedAt}
	}
	var tk usher.Ticket
	binary.LittleEndian.PutUint64(tk.VisitorID[:], e.random())
	tk.State = usher.Waiting
	tk.ArrivedAt = now.Truncate(time.Millisecond)
	if j := MaxJitter(sched.RefreshInterval).Milliseconds(); j > 0 {
		tk.Jitter = time.Duration(int64(e.random()%uint64(2*j+1))-j) * time.Millisecond
	}
	if sched.Phase == usher.Prequeue && sched.Event.ShuffleAtStart {
		tk.Place = shuffledPlace(sched.Event, e.random())
	}
	return tk, usher.Cell{}
}

// shuffleSpan is the least number of seconds the shuffled pre-queue is
// spread over, so that ties (two visitors drawing the same second) are rare.
const shuffleSpan = 24 * 3600

// shuffledPlace returns a uniformly random place before ev's start: every
// pre-queued visitor is ahead of everyone who arrives after the start, and
// in an order that arrival time does not decide.
func shuffledPlace(ev *usher.Event, r uint64) int64 {
	span := max(int64(ev.Start.Sub(ev.PrequeueStart)/time.Second), shuffleSpan)
	return ev.Start.Unix() - 1 - int64(r%uint64(span))
}

// keep serves an admitted visitor whose session runs: no store round trip;
// when the session end moves to a later second, the visitor's active count
// moves with it and the ticket is re-sealed.
func (e *Engine) keep(ctx context.Context, room string, s *usher.Settings, t usher.Ticket, now time.Time, d usher.Decision) (usher.Decision, error) {
	d.Outcome = usher.Admit
	d.Ticket = t
	if s.DisableSessionRenewal {
		return d, nil
	}
	end := usher.CeilSecond(now.Add(s.SessionDuration))
	if !end.After(t.SessionEnd(s)) {
		return d, nil
	}
	next := t
	next.CountedAt = now.Truncate(time.Millisecond)
	next.Cell = end.Unix() + e.slack
	mv := usher.Move{From: usher.Cell{Exp: t.Cell, At: t.CountedAt}, To: next.Cell}
	if err := e.touch(ctx, room, t.VisitorID, mv, now); err != nil {
		// The visitor keeps its session; its old count still covers it
		// until the old session end, so only the renewal is lost.
		e.opts.Logger.Warn("activity not counted", "room", room, "err", err)
		return d, nil
	}
	d.Ticket = next
	d.TicketChanged = true
	return d, nil
}

// touch applies or queues one activity move.
func (e *Engine) touch(ctx context.Context, room string, visitor [8]byte, mv usher.Move, now time.Time) error {
	if e.opts.FlushInterval <= 0 {
		return e.store.Touch(ctx, room, now, []usher.Move{mv})
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	byVisitor := e.pendingLocked(room)
	if prev, ok := byVisitor[visitor]; ok {
		mv = mergeMoves(prev, mv)
	}
	byVisitor[visitor] = mv
	return nil
}

// pendingLocked returns room's batched moves by visitor; e.mu is held.
func (e *Engine) pendingLocked(room string) map[[8]byte]usher.Move {
	byVisitor := e.pending[room]
	if byVisitor == nil {
		byVisitor = map[[8]byte]usher.Move{}
		e.pending[room] = byVisitor
	}
	return byVisitor
}

// mergeMoves folds one visitor's older and newer moves into one: parallel
// requests with one old ticket, or renewals chained between flushes, make
// one move from the oldest cell to the latest.
func mergeMoves(older, newer usher.Move) usher.Move {
	if newer.From.Exp == older.From.Exp || newer.From.Exp == older.To {
		newer.From = older.From
	}
	newer.To = max(newer.To, older.To)
	return newer
}

// Flush sends the batched activity moves to the store.
func (e *Engine) Flush(ctx context.Context, now time.Time) error {
	e.mu.Lock()
	pending := e.pending
	e.pending = map[string]map[[8]byte]usher.Move{}
	e.mu.Unlock()
	var first error
	for room, byVisitor := range pending {
		moves := make([]usher.Move, 0, len(byVisitor))
		for _, mv := range byVisitor {
			moves = append(moves, mv)
		}
		if err := e.store.Touch(ctx, room, now, moves); err != nil {
			// The tickets already name the new cells: keep the moves for
			// the next flush, or later renewals would take visitors out of
			// cells they never reached.
			e.requeue(room, byVisitor)
			if first == nil {
				first = err
			}
		}
	}
	return first
}

// requeue puts moves that failed to flush back in front of the moves
// batched since.
func (e *Engine) requeue(room string, failed map[[8]byte]usher.Move) {
	e.mu.Lock()
	defer e.mu.Unlock()
	byVisitor := e.pendingLocked(room)
	for v, old := range failed {
		if newer, ok := byVisitor[v]; ok {
			old = mergeMoves(old, newer)
		}
		byVisitor[v] = old
	}
}

// Run flushes batched activity every FlushInterval until ctx is done, then
// flushes once more. It returns at once when FlushInterval is zero.
func (e *Engine) Run(ctx context.Context, now func() time.Time) {
	if e.opts.FlushInterval <= 0 {
		return
	}
	t := time.NewTicker(e.opts.FlushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := e.Flush(context.WithoutCancel(ctx), now()); err != nil {
				e.opts.Logger.Error("final activity flush failed", "err", err)
			}
			return
		case <-t.C:
			if err := e.Flush(ctx, now()); err != nil {
				e.opts.Logger.Error("activity flush failed", "err", err)
			}
		}
	}
}

// Status returns the room's live counters at now, with its free slots.
func (e *Engine) Status(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error) {
	st, err := e.store.Stats(ctx, room.ID, now)
	if err != nil {
		return usher.RoomStats{}, err
	}
	s := room.At(now).Settings
	st.Slots = max(0, min(int64(s.TotalActiveUsers)-st.Active, int64(s.NewUsersPerMinute)-st.AdmittedLastMinute))
	return st, nil
}
