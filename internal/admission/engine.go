// Package admission is usher's admission engine: given a room, the
// visitor's ticket and the time, it decides whether the visitor goes in or
// waits, and what the ticket says next. It keeps no per-visitor state; the
// room's counters and its records of live visitors sit behind usher.Store,
// and every decision that changes them is one Store call.
//
// The engine holds the invariants of docs/design.md with any store that
// implements the Store contract; see docs/admission.md.
package admission

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/limit"
)

// Options configure an Engine. The zero value is usable.
type Options struct {
	// CellSlack is how long a session's active cell outlives the session
	// (zero on one node). Nodes sharing a store whose clocks differ by up
	// to CellSlack then never see a session whose count has expired.
	CellSlack time.Duration
	// Rand returns random 64-bit values for visitor ids and jitter (nil: a
	// generator seeded from crypto/rand). Tests pass a seeded one, which
	// then also makes the draws' secrets, so that a run repeats (without
	// it they come from crypto/rand).
	Rand func() uint64
	// Now returns the time, read only to measure how long the store takes
	// to answer (nil: time.Now); decisions take their time from the visit.
	Now func() time.Time
	// Logger receives store errors (nil: slog.Default()).
	Logger *slog.Logger
	// FailOpen admits new visitors, uncounted, while the store cannot be
	// reached; otherwise (fail closed) they wait. See failDecision.
	FailOpen bool
	// Limiter, when not nil, supplies the effective limits of rooms whose
	// autopilot is on in the settings in force (internal/autopilot).
	Limiter Limiter
	// OnBreaker, when set, is called when the store's circuit breaker
	// opens (open true, with the last store error: decisions apply the
	// fail mode) and when it closes again. It must not block.
	OnBreaker func(open bool, err error)
	// Observer, when not nil, is told of arrivals, admissions and ended
	// sessions (see Observation); never of an admitted visitor's request.
	Observer Observer
	// ClientKeys returns the hasher of per-client limit keys in force,
	// under a secret derived from the key ring, so that every node sharing
	// the ring (and the store) counts a client in the same cells (nil: a
	// hasher under a random secret of this engine's own: right on one
	// node only).
	ClientKeys func() *limit.Hasher
	// Prior, when not nil, returns the factor room learned from its
	// earlier lines (learn.go): a line's cold first pages scale the
	// forecast from the limits by it. It is called when a line forms, on
	// the decision's goroutine, so it must be quick (a cached value).
	Prior func(room string) (factor float64, ok bool)
}

// Limiter supplies a room's effective limits.
type Limiter interface {
	// Limit sets s's NewUsersPerMinute and TotalActiveUsers to the
	// effective figures of room, within the bounds s's Autopilot gives;
	// it leaves s as it is when nothing governs the room. It is called on
	// every decision of a governed room and must be cheap (atomic loads).
	Limit(room string, s *usher.Settings)
}

// schedule returns the room's schedule at now, with the effective limits
// when its autopilot is on.
func (e *Engine) schedule(room *usher.Room, now time.Time) usher.Schedule {
	sched := room.At(now)
	if e.opts.Limiter != nil && sched.Autopilot.Enabled {
		return e.limited(room.ID, sched)
	}
	return sched
}

// limited returns sched with the autopilot's effective limits. It is
// apart from schedule so that only a room with its autopilot on pays for
// the copy of the settings the Limiter's pointer moves to the heap (a
// third of a decision's allocations otherwise).
func (e *Engine) limited(room string, sched usher.Schedule) usher.Schedule {
	e.opts.Limiter.Limit(room, &sched.Settings)
	return sched
}

// Engine decides admissions. It is safe for concurrent use.
type Engine struct {
	store usher.Store
	opts  Options
	slack atomic.Int64 // how long an active cell outlives its session (ns, whole milliseconds)
	// slackMax is the longest slack in force so far: a record of a session
	// ended lives as long as any session counted with it could.
	slackMax atomic.Int64
	// spread is the most the nodes' clocks are known to be apart (ns), -1
	// while not measured: see renewBy.
	spread atomic.Int64

	brk     breaker
	revoked revoked
	flow    flows // what this engine saw of each line, for estimates
	lines   lines // each room's standing line and its learned factor
	// lost counts decisions on a ticket one answer behind the store's
	// record: takeovers, and lost admissions delivered or started over.
	lost atomic.Int64
	// late counts renewals answered after their RenewOp.By.
	late atomic.Int64
	// lapsedIns counts check-ins of waiters whose waiting count had
	// expired by their decision.
	lapsedIns atomic.Int64
	// pending are the renewals owed while the store was unreachable
	// (replay.go).
	pending pendingRenewals
	// noServing leaves the serving counter out of estimates (tests).
	noServing bool
	draws     draws // verifiable draws read from the store (draw.go)

	mu  sync.Mutex
	rng func() uint64
}

// New returns an engine over store.
func New(store usher.Store, opts Options) *Engine {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	rng := opts.Rand
	if rng == nil {
		var seed [32]byte
		_, _ = crand.Read(seed[:])
		r := rand.New(rand.NewChaCha8(seed))
		rng = r.Uint64
	}
	if opts.ClientKeys == nil {
		var secret [32]byte
		_, _ = crand.Read(secret[:])
		h := limit.NewHasher(secret[:])
		opts.ClientKeys = func() *limit.Hasher { return h }
	}
	e := &Engine{store: store, opts: opts, rng: rng}
	e.brk.log = opts.Logger
	e.brk.onChange = opts.OnBreaker
	e.brk.onOK = e.replaySoon
	e.SetCellSlack(opts.CellSlack)
	e.spread.Store(-1)
	return e
}

// SetClockSpread sets the most the clocks of the nodes sharing the store
// are known to be apart (measured: see renewBy).
func (e *Engine) SetClockSpread(d time.Duration) { e.spread.Store(int64(max(d, 0))) }

// renewBy is the latest moment, on this engine's clock, a renewal of a
// session counted in the active cell expiring at cell may be known applied
// (usher.RenewOp.By): the cell less the most the clocks of the nodes that
// share the store can be ahead of this one. Until then no node has applied
// an op stamped at or after the cell, so the count was still there when
// the renewal moved it. Past it, a node's op may have expired the count
// first and the place been given to another (the session, renewed, would
// then run on a count that lapsed for a moment). The spread is the
// measured one (SetClockSpread), else the cell slack, which is chosen to
// cover it. A request is renewed only before its session ends, the slack
// before the cell: a renewal has at least the slack less the spread to
// come back. A ticket counted in no cell has no bound.
func (e *Engine) renewBy(cell int64) time.Time {
	if cell <= 0 {
		return time.Time{} // not counted in a cell: nothing to lapse
	}
	apart := e.CellSlack()
	if s := e.spread.Load(); s >= 0 {
		apart = time.Duration(s)
	}
	return time.Unix(cell, 0).Add(-apart)
}

// SetCellSlack sets how long the active cells of the sessions counted from
// now on outlive them (Options.CellSlack), rounded up to the millisecond.
// Each ticket carries its session's end and its cell, so sessions counted
// before keep theirs.
func (e *Engine) SetCellSlack(d time.Duration) {
	v := int64((max(d, 0) + time.Millisecond - 1).Truncate(time.Millisecond))
	e.slack.Store(v)
	for m := e.slackMax.Load(); v > m && !e.slackMax.CompareAndSwap(m, v); m = e.slackMax.Load() {
	}
}

// CellSlack returns the cell slack in force.
func (e *Engine) CellSlack() time.Duration { return time.Duration(e.slack.Load()) }

// end returns when a session counted at now under s ends, and the cell
// (unix second) its count expires at. The count outlives the session by
// exactly the slack: the cell is the first whole second at least
// SessionHold plus the slack after now, and the session ends the slack
// before it. With no slack that is SessionUntil; with a whole-second slack
// the session still ends on a whole second. A sub-second slack costs a
// room whose sessions end at R a second only R x slack idle places, where
// a slack rounded up to the second would cost R.
func (e *Engine) end(s *usher.Settings, now time.Time) (until time.Time, cell int64) {
	slack := e.CellSlack()
	c := usher.CeilSecond(now.Add(usher.SessionHold(s) + slack))
	return time.Unix(c.Unix(), 0).Add(-slack).UTC(), c.Unix()
}

// until is when the session whose count expires at cell ends, by the
// slack in force now: the store's record keeps the cell, not the session's
// end, so a session counted under another slack (raised since, or lowered
// back) is given the end the present slack makes of its cell.
func (e *Engine) until(cell int64) time.Time {
	return time.Unix(cell, 0).Add(-e.CellSlack()).UTC()
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

// answered returns the refresh a waiting answer tells its page and the
// ticket's next check-in, when the store answered the decision at now
// took after it, the decision having chosen refresh and next (now plus
// refresh). The waiter's count runs from the decision (its waiting cell
// expires Grace after next), but its page waits its refresh from the
// answer: an answer that came late would bring the page back that much
// later, into the grace, and past it once the answers are as late as the
// grace is long (a second and a quarter of the interval: replies 1 s late
// left half a second at refresh_interval 2s), when the count lapses and
// later arrivals pass the waiter. So the page is told to come back at
// next from the answer, to the whole second (at least one): a slow store
// costs the waiter time, not its place. An answer under half a second
// late changes nothing.
func answered(now time.Time, took, refresh time.Duration, next time.Time) (time.Duration, time.Time) {
	at := now.Add(took)
	r := max(time.Second, next.Sub(at).Round(time.Second))
	if r >= refresh {
		return refresh, next
	}
	return r, at.Add(r)
}

// nearFront reports whether a FIFO waiter is likely to go in within one
// refresh interval: fewer people ahead than the free slots plus the
// admissions expected during the interval at the last minute's pace, or
// the limits' forecast frees a place for it within the interval (sessions
// that end, admissions that leave the rate window: when a line has just
// formed, or when the rate window slides, more places free than the last
// minute's pace says).
func (e *Engine) nearFront(room string, res usher.AdmitResult, s *usher.Settings, now time.Time) bool {
	soon := float64(res.Slots) + drainRate(res, s)*s.RefreshInterval.Minutes()
	if float64(res.Ahead) < soon {
		return true
	}
	return e.forecast(room, res, s, now, res.Ahead+1) <= s.RefreshInterval
}

// reach is how far back a waiter may be and still go in within a minute at
// the most: every place and a minute of admissions ahead of it.
func reach(s *usher.Settings) int64 {
	return int64(s.TotalActiveUsers) + int64(s.NewUsersPerMinute)
}

// Grace is how long after its next check-in is due a waiter still counts
// as live: the page's own rounding and load time. A waiter who closed the
// tab stops holding a place at most RefreshInterval + jitter + Grace after
// its last check-in.
func Grace(refresh time.Duration) time.Duration { return time.Second + refresh/4 }

// MaxJitter is the largest offset, either way, on a waiter's refresh
// interval.
func MaxJitter(refresh time.Duration) time.Duration { return refresh / 10 }

// EarlyTolerance is the most a check-in may come before its NextCheckIn
// and still count: the clock difference between nodes and the page's own
// timing. An earlier check-in changes nothing. A ticket's own tolerance is
// also at most a quarter of its check-in interval (see early), so that a
// client polling fast is counted at most a quarter more often than a page
// that waits its turn.
const EarlyTolerance = time.Second

// tolerance returns how early tk's next check-in may come and still count:
// EarlyTolerance, at most a quarter of the interval the ticket was given.
func tolerance(tk *usher.Ticket) time.Duration {
	if tk.CountedAt.IsZero() || !tk.NextCheckIn.After(tk.CountedAt) {
		return EarlyTolerance
	}
	return min(EarlyTolerance, tk.NextCheckIn.Sub(tk.CountedAt)/4)
}

// ReplayGrace is how long after a visitor's admission another request
// with its last waiting ticket (a page and its JSON at once, a proxy asking
// twice for one request) gets the same admission instead of a wait.
const ReplayGrace = 5 * time.Second

// BackSpan is how far behind the arrivals of the moment a visitor over its
// per-client limit waits: a day of arrival seconds, so that everyone who
// arrives meanwhile goes first.
const BackSpan = 24 * time.Hour

// Decide returns the decision for a visit to room.
func (e *Engine) Decide(ctx context.Context, room *usher.Room, v usher.Visit) (usher.Decision, error) {
	// A store call runs to its end whatever the client does: a request
	// that hangs up must neither cut a decision in half nor count as a
	// store failure. The store bounds every call with its own timeout.
	ctx = context.WithoutCancel(ctx)
	t := v.Ticket
	if t == nil || t.State != usher.Admitted {
		return e.decide(ctx, room, v, usher.Session{})
	}
	ses := room.Session(t, v.Now)
	if ses.Valid {
		return e.decide(ctx, room, v, ses)
	}
	// A session that has ended: the visitor is a new one, and the end is
	// told once (the store says which request is first).
	ended, rec := e.lapse(ctx, room, t, ses, v.Now)
	if d, ok, err := e.resume(ctx, room, v, rec); ok {
		return d, err
	}
	v.Ticket = nil
	d, err := e.decide(ctx, room, v, usher.Session{})
	d.SessionEnded = ended && err == nil
	return d, err
}

// decide is Decide, once a ticket whose session ended has been told; ses
// is the session of an admitted ticket (room.Session, read once).
func (e *Engine) decide(ctx context.Context, room *usher.Room, v usher.Visit, ses usher.Session) (usher.Decision, error) {
	now := v.Now
	sched := e.schedule(room, now)
	s := &sched.Settings
	base := usher.Decision{Settings: sched.Settings, Phase: sched.Phase, Event: sched.Event, QueueAll: s.QueueAll}
	if s.Suspended {
		base.Outcome = usher.Pass
		return base, nil
	}
	t := v.Ticket
	if t != nil && t.State == usher.Admitted {
		if ses.Valid && !e.revoked.has(t.VisitorID, now) {
			if d, ok := e.keep(ctx, room.ID, ses, *t, now, base); ok {
				if d, ok = e.renewServed(ctx, room, d, now); ok {
					return d, nil
				}
			}
		}
		// A session the settings in force ended before its count did keeps
		// its count to the end: settings that change back would make the
		// ticket (or a copy of it) valid again, and it must still be counted.
		t = nil
	}
	if s.QueueingMethod == usher.Reject && sched.Phase != usher.Prequeue {
		base.Outcome = usher.Turn
		return base, nil
	}
	if v.Invite != 0 {
		t = nil // an invite makes a new visitor
	}
	tk, from, fresh := e.waiter(t, now, &sched)
	unproven := false
	if fresh && v.Invite == 0 && v.Proof.On && s.ProofOfWork.Difficulty > 0 {
		proved, err := e.prove(ctx, room.ID, &v.Proof)
		if err != nil {
			return usher.Decision{}, err
		}
		if !proved && s.ProofOfWork.Always {
			base.Outcome = usher.Challenge
			return base, nil
		}
		// Without a proof, in only at once into a free slot (decided with
		// the admission: AdmitOp.Unproven).
		unproven = !proved
	}
	if fresh {
		e.drawPlace(ctx, room.ID, &tk, &sched, now) // a shuffled pre-queue's place
	}
	if v.Invite == usher.InviteFront {
		tk.Place = usher.FrontPlace
	}
	if !fresh && !tk.NextCheckIn.IsZero() && now.Before(tk.NextCheckIn.Add(-tolerance(&tk))) {
		return e.early(ctx, room.ID, tk, base, &sched, now)
	}
	if !fresh && tk.Cell != 0 && tk.Cell <= now.Unix() {
		// Back after its count expired: later arrivals may have gone in
		// ahead of it meanwhile.
		e.lapsedIns.Add(1)
	}
	counted := countedAfter(now, tk.CountedAt)
	// The interval this check-in counts the waiter for, from the fewest
	// waiters that can be ahead of it now (its ticket's last position less
	// the room's most admissions since): its waiting cell expires Grace
	// after it. A newcomer, whose place is not known yet, gets
	// refresh_interval.
	iv := s.RefreshInterval
	if !fresh && adaptive(s) {
		iv = grown(interval(aheadAtLeast(&tk, s, now), s, &sched, now), &tk, s)
	}
	refresh := checkInAfter(iv, scaledJitter(tk.Jitter, iv, s.RefreshInterval))
	next := now.Add(refresh)
	admittedTk := tk
	admittedTk.State = usher.Admitted
	admittedTk.AdmittedAt = counted
	admittedTk.CountedAt = counted
	admittedTk.Until, admittedTk.Cell = e.end(s, now)
	admittedTk.NextCheckIn = time.Time{}
	admittedTk.DrewAt = time.Time{}
	admittedTk.Back = false
	admittedTk.Joining = false
	admittedTk.Announced = 0

	op := usher.AdmitOp{
		Now:               now,
		Visitor:           tk.VisitorID,
		Counted:           counted,
		Keep:              now.Add(MaxAbsence(s.RefreshInterval)).Unix() + 1,
		TotalActiveUsers:  s.TotalActiveUsers,
		NewUsersPerMinute: s.NewUsersPerMinute,
		SessionDuration:   usher.SessionHold(s), // how long a session is counted after its last request
		Bucket:            tk.Bucket(),
		From:              from,
		WaitExp:           usher.CeilSecond(next.Add(Grace(iv))).Unix(),
		ActiveExp:         admittedTk.Cell,
		// Nobody new goes in before the event starts.
		NoAdmit:  s.QueueAll || sched.Phase == usher.Prequeue,
		Force:    s.QueueingMethod == usher.Passthrough && !s.QueueAll && sched.Phase != usher.Prequeue,
		Unproven: unproven,
		Shards:   s.Shards,
	}
	if tk.Joining {
		// Its first check-in: from the joining bucket to its place.
		op.FromBucket = tk.JoinBucket()
	}
	if !fresh {
		// The ticket may be one answer behind the store's record (a call
		// that timed out after the store applied it): it takes the record
		// over once its own check-in would have been due (see takeOverBy).
		takeOverBy(&op, s, now)
	}
	if v.Invite == usher.InviteAdmit {
		op.Force = true // in at once, counted
	}
	if cl := &s.ClientLimit; fresh && cl.On() && v.Client.IsValid() && v.Invite == 0 {
		h := e.opts.ClientKeys()
		op.Client = usher.ClientOp{Key: h.Key(limit.TierClient, cl.Prefix(v.Client)), PerMinute: cl.NewVisitorsPerMinute,
			NetworkKey: h.Key(limit.TierNetwork, cl.NetworkPrefix(v.Client)), NetworkPerMinute: cl.NetworkPerMinute(),
			Refuse: cl.Rejects(), Back: now.Add(BackSpan).Unix()}
	}
	verifiable := false // a lottery draw from the committed chain
	if s.QueueingMethod == usher.Random && !op.NoAdmit && !op.Force {
		switch {
		case tk.Place == usher.FrontPlace:
			// A front invite: in at the first free slot.
			op.Random, op.Draw = true, 0
		case fresh:
			// A visitor without a ticket gets no draw while others wait:
			// it joins the pool and draws from its first check-in on, so
			// that dropping the cookie gains nothing.
			op.Joining = true
			// Until then it waits in its joining bucket, out of the draws'
			// pool: a flood of visits that never come back would otherwise
			// thin every honest waiter's chance while slots stay free. It
			// still counts as waiting, so that no newcomer goes in past it.
			op.Bucket = tk.JoinBucket()
		case drewIn(tk.DrewAt, now, s.RefreshInterval):
			op.NoAdmit = true // one draw per window: reloading gains nothing
		default:
			op.Random = true
			op.Draw, verifiable = e.lotteryDraw(ctx, room.ID, tk.VisitorID, now, s.RefreshInterval)
			op.DrawBefore = now.Add(BackSpan / 2).Unix()
			if tk.Back {
				// At the back of the line: in only when there is room for
				// every live waiter.
				op.Draw = math.Nextafter(1, 0)
			}
			tk.DrewAt = now.Truncate(time.Millisecond)
		}
	}
	if !e.brk.allow(now) {
		return e.failUnproven(room.ID, base, tk, fresh, unproven, s, now), nil
	}
	start := e.opts.Now()
	res, err := e.store.Admit(ctx, room.ID, op)
	took := e.opts.Now().Sub(start)
	e.brk.result(now, err)
	if err != nil {
		if usher.ErrorCode(err) == usher.EUnavailable {
			return e.failUnproven(room.ID, base, tk, fresh, unproven, s, now), nil
		}
		return usher.Decision{}, err
	}
	if verifiable && res.Admitted && !res.Replay && !tk.Back {
		e.recordLottery(ctx, room.ID, tk.VisitorID, now, s.RefreshInterval, op.Draw)
	}
	d := base
	d.Stats = res.RoomStats
	if res.Unproven {
		// It would wait: it solves a challenge first, and holds no place
		// meanwhile.
		d.Outcome = usher.Challenge
		return d, nil
	}
	fifo := !op.Random && !op.Joining && !op.NoAdmit && !op.Force && !res.OverClient && !res.Admitted
	e.flow.refused(room.ID, now, op.Bucket, res.Ahead, res.Slots, reach(s), fifo)
	if res.Replay {
		if lapsedAdmission(res.Record, &tk, now) {
			e.lost.Add(1)
			// Its admission was counted but never delivered, and the
			// session has ended: it starts over as a new visitor, as the
			// admitted ticket would have (a ticket is admitted once).
			v.Ticket, v.Invite = nil, 0
			return e.Decide(ctx, room, v)
		}
		d, ok := e.renewServed(ctx, room, e.replayed(d, room.ID, tk, res, &sched, now, took), now)
		if !ok {
			// The session was ended (revoked) meanwhile: a new visitor.
			v.Ticket, v.Invite = nil, 0
			return e.Decide(ctx, room, v)
		}
		return d, nil
	}
	if res.OverClient {
		d.OverClient = true
		if op.Client.Refuse {
			d.Outcome = usher.Turn
			return d, nil
		}
		tk.Place, tk.Back = op.Client.Back, true
	}
	d.TicketChanged = true
	if res.TookOver {
		e.lost.Add(1)
	}
	if fresh {
		e.observeArrived(room.ID, now)
	}
	if res.Admitted {
		e.flow.admitted(room.ID, now, admittedTk.Cell)
		e.observeAdmitted(room.ID, &tk, now)
		d.Outcome = usher.Admit
		d.NewlyAdmitted = true
		d.Ticket = admittedTk
		return d, nil
	}
	if sched.Phase == usher.NoEvent || sched.Phase == usher.Running {
		if s.QueueingMethod != usher.Random && e.nearFront(room.ID, res, s, now) {
			// Its turn is likely within a refresh interval: check in twice
			// as often, so a place freed for it waits half as long.
			refresh = checkInAfter(s.RefreshInterval/2, tk.Jitter/2)
			next = now.Add(refresh)
		}
	}
	if iv > s.RefreshInterval {
		// Fewer were ahead than the ticket alone could tell (leavers ahead
		// stopped counting): never later than the place it has now allows.
		if iv2 := interval(res.Ahead, s, &sched, now); iv2 < iv {
			if r := checkInAfter(iv2, scaledJitter(tk.Jitter, iv2, s.RefreshInterval)); r < refresh {
				refresh, next = r, now.Add(r)
			}
		}
	}
	refresh, next = answered(now, took, refresh, next)
	tk.CountedAt = counted
	tk.Cell = op.WaitExp
	tk.Joining = op.Joining && !res.OverClient
	tk.NextCheckIn = next
	tk.Position = res.Ahead + 1
	d.Outcome = usher.Wait
	d.Ticket = tk
	d.Position = res.Ahead + 1
	d.RefreshAfter = refresh
	e.estimate(&d, room.ID, tk.Bucket(), res, &sched, now)
	announce(&d, now)
	return d, nil
}

// maxAnnounced is the longest announced wait a ticket keeps (longer
// estimates are not worth measuring against).
const maxAnnounced = 30 * 24 * time.Hour

// announce records in a waiting ticket the wait (from its arrival) its
// first waiting page with a known estimate announces, so that the error
// of the estimate can be measured at admission.
func announce(d *usher.Decision, now time.Time) {
	if !d.WaitKnown || d.Ticket.Announced != 0 || d.EstimatedWait < 0 {
		return
	}
	if w := now.Add(d.EstimatedWait).Sub(d.Ticket.ArrivedAt).Truncate(time.Millisecond); w <= maxAnnounced {
		d.Ticket.Announced = max(w, time.Millisecond)
	}
}

// estimate fills in the decision's estimated wait for a waiter of bucket
// in room.
func (e *Engine) estimate(d *usher.Decision, room string, bucket int64, res usher.AdmitResult, sched *usher.Schedule, now time.Time) {
	s := &sched.Settings
	if sched.Phase != usher.Prequeue && s.QueueingMethod != usher.Random {
		e.flow.waiting(room, now, bucket, res.Ahead)
	}
	switch {
	case sched.Phase == usher.Prequeue:
		d.WaitKnown, d.EstimatedWait = true, sched.Event.Start.Sub(now)
	case s.QueueingMethod == usher.Random:
		d.WaitKnown, d.WaitLow, d.EstimatedWait, d.WaitHigh = estimateRandom(res, s)
	case s.QueueAll:
		// Nobody is let in until the operator lifts queue_all.
	default:
		var cold bool
		d.WaitKnown, d.EstimatedWait, cold = e.fifoWait(room, res, s, d.RefreshAfter, now)
		if cold && d.Ticket.Announced == 0 {
			e.lines.cold(room, d.Ticket.ArrivedAt)
		}
	}
}

// countedAt returns the counted-at time of the ticket a count at now makes:
// now to the millisecond, and always after the counted-at of the ticket it
// replaces (prev), since the store tells tickets apart by it.
func countedAfter(now, prev time.Time) time.Time {
	c := now.Truncate(time.Millisecond)
	if !prev.IsZero() && !c.After(prev) {
		c = prev.Add(time.Millisecond)
	}
	return c
}

// early answers a check-in that comes before its ticket allows: nothing is
// counted; the waiter sees its place as it is and checks in again when its
// ticket allows.
func (e *Engine) early(ctx context.Context, room string, tk usher.Ticket, d usher.Decision, sched *usher.Schedule, now time.Time) (usher.Decision, error) {
	s := &sched.Settings
	if !e.brk.allow(now) {
		return e.failDecision(room, d, tk, false, s, now), nil
	}
	start := e.opts.Now()
	ahead, st, err := e.store.Peek(ctx, room, now, tk.Bucket())
	took := e.opts.Now().Sub(start)
	e.brk.result(now, err)
	if err != nil {
		if usher.ErrorCode(err) == usher.EUnavailable {
			return e.failDecision(room, d, tk, false, s, now), nil
		}
		return usher.Decision{}, err
	}
	st.Slots = max(0, min(int64(s.TotalActiveUsers)-st.Active, int64(s.NewUsersPerMinute)-st.AdmittedLastMinute))
	fifo := s.QueueingMethod != usher.Random && !s.QueueAll && sched.Phase != usher.Prequeue && !tk.Back && !tk.Joining
	e.flow.refused(room, now, tk.Bucket(), ahead, st.Slots, reach(s), fifo)
	d.Stats = st
	d.Replay = true
	d.Outcome = usher.Wait
	d.Ticket = tk
	d.Position = ahead + 1
	d.RefreshAfter = max(time.Second, tk.NextCheckIn.Sub(now.Add(took)).Round(time.Second))
	e.estimate(&d, room, tk.Bucket(), usher.AdmitResult{Ahead: ahead, RoomStats: st}, sched, now)
	return d, nil
}

// takeOverBy sets op's TakeOver and TakeOverCell for a ticket presented
// at now: a store's record counted from it (an answer the visitor never
// got) is taken over only once that record's own next check-in would have
// been due, when its waiting cell expires within Grace(refresh_interval)
// of now (a waiting cell expires a grace after its ticket's next check-in,
// and no grace is shorter), and a second or more after it was counted. So
// the visitor's record moves no more often through takeovers than through
// its tickets: copies of a ticket gain no check-ins. In a random room the
// record must also be from an earlier draw window, so that the lost
// check-in's draw and the takeover's are never in the same window.
func takeOverBy(op *usher.AdmitOp, s *usher.Settings, now time.Time) {
	by := now.Add(-time.Second)
	if s.QueueingMethod == usher.Random {
		ms := max(s.RefreshInterval.Milliseconds(), 1)
		if start := time.UnixMilli(window(now, s.RefreshInterval) * ms).Add(-time.Millisecond); start.Before(by) {
			by = start
		}
	}
	op.TakeOver = by.UTC()
	op.TakeOverCell = now.Add(Grace(s.RefreshInterval)).Unix()
}

// takeOverAt returns the first moment at which the ticket a record was
// counted from may take it over: the inverse of takeOverBy.
func takeOverAt(s *usher.Settings, rec usher.Record) time.Time {
	t := rec.At.Add(time.Second)
	if c := time.Unix(rec.Cell, 0).Add(-Grace(s.RefreshInterval)); rec.Cell != 0 && c.After(t) {
		t = c
	}
	if s.QueueingMethod == usher.Random {
		ms := max(s.RefreshInterval.Milliseconds(), 1)
		if next := time.UnixMilli((window(rec.At, s.RefreshInterval) + 1) * ms); next.After(t) {
			t = next
		}
	}
	return t
}

// lapsedAdmission reports whether rec, the store's record of the visitor
// of waiting ticket tk, is an admission counted from tk (or the one a
// failed call gave tk for) whose session has ended by now.
func lapsedAdmission(rec usher.Record, tk *usher.Ticket, now time.Time) bool {
	return rec.Admitted && rec.Cell != 0 && rec.Cell <= now.Unix() &&
		((!rec.From.IsZero() && rec.From.Equal(tk.CountedAt)) || rec.At.Equal(tk.CountedAt))
}

// replayed answers a waiting ticket the store had already counted on. The
// visitor's own parallel request may have been admitted a moment ago (a
// page and its JSON at once, a proxy asking twice): within ReplayGrace it
// gets the same admission. So does, while the session runs, the ticket the
// admission was counted from (the visitor never got the answer that
// carried it: a call that timed out after the store applied it), and the
// ticket a failed call gave a new visitor whose admission the store
// counted. Otherwise nothing changes: the ticket is not sent again and the
// waiter sees its place; a ticket one answer behind is told when it may
// take the store's record over.
func (e *Engine) replayed(d usher.Decision, room string, tk usher.Ticket, res usher.AdmitResult, sched *usher.Schedule, now time.Time, took time.Duration) usher.Decision {
	d.Replay = true
	rec := res.Record
	behind := !rec.From.IsZero() && rec.From.Equal(tk.CountedAt)
	if rec.Admitted && rec.Cell > now.Unix() &&
		(now.Sub(rec.At) <= ReplayGrace || behind || rec.At.Equal(tk.CountedAt)) {
		if now.Sub(rec.At) > ReplayGrace {
			e.lost.Add(1) // a lost admission delivered
		}
		at := tk
		at.State = usher.Admitted
		at.AdmittedAt, at.CountedAt = rec.At, rec.At
		at.Cell = rec.Cell
		at.Until = e.until(rec.Cell)
		at.NextCheckIn, at.DrewAt, at.Back = time.Time{}, time.Time{}, false
		d.Outcome = usher.Admit
		d.Ticket = at
		d.TicketChanged = true
		return d
	}
	d.Outcome = usher.Wait
	d.Ticket = tk
	d.Position = res.Ahead + 1
	d.RefreshAfter = checkInAfter(sched.RefreshInterval, tk.Jitter)
	if !tk.NextCheckIn.IsZero() {
		d.RefreshAfter = max(time.Second, tk.NextCheckIn.Sub(now.Add(took)).Round(time.Second))
	}
	if behind && !rec.Admitted {
		// Back when it may take the record over (it came too soon).
		if w := takeOverAt(&sched.Settings, rec).Sub(now); w > 0 {
			d.RefreshAfter = max(d.RefreshAfter, (w + time.Second - 1).Truncate(time.Second))
		}
	}
	e.estimate(&d, room, tk.Bucket(), res, sched, now)
	return d
}

// MaxAbsence is how long a waiter may stay away (not check in) and still
// keep its place; after that its ticket counts as a new visitor's. Without
// it, a ticket kept from an earlier queue (or an earlier event) would jump
// to the front of a later one. The store remembers a visitor as long. It is
// at least 10 minutes, twice the longest check-in interval a room may give
// (max_refresh_interval is at most 5 minutes).
func MaxAbsence(refresh time.Duration) time.Duration { return max(10*time.Minute, 10*refresh) }

// adaptive reports whether a room's waiters get check-in intervals that
// grow with their place in line: FIFO rooms, not random ones (a random
// room's waiter draws at each check-in; see docs/admission.md).
func adaptive(s *usher.Settings) bool {
	return s.QueueingMethod != usher.Random && MaxInterval(s) > s.RefreshInterval
}

// waiter returns the ticket a visitor waits with (its own while it is a
// sane waiting ticket, else a new one arriving now, fresh) and the waiting
// cell it is counted in. A visitor who arrives while an event's pre-queue
// is open gets its place at the start: shuffled, or by arrival.
func (e *Engine) waiter(t *usher.Ticket, now time.Time, sched *usher.Schedule) (tk usher.Ticket, from usher.Cell, fresh bool) {
	if t != nil && t.State == usher.Waiting && !t.ArrivedAt.After(now.Add(time.Minute)) &&
		!t.CountedAt.IsZero() && now.Sub(t.CountedAt) <= MaxAbsence(sched.RefreshInterval) {
		return *t, usher.Cell{Exp: t.Cell, At: t.CountedAt}, false
	}
	binary.LittleEndian.PutUint64(tk.VisitorID[:], e.random())
	tk.State = usher.Waiting
	tk.ArrivedAt = now.Truncate(time.Millisecond)
	if j := MaxJitter(sched.RefreshInterval).Milliseconds(); j > 0 {
		tk.Jitter = time.Duration(int64(e.random()%uint64(2*j+1))-j) * time.Millisecond
	}
	if sched.Phase == usher.Prequeue && sched.Event.ShuffleAtStart {
		tk.Place = shuffledPlace(sched.Event, e.random())
	}
	return tk, usher.Cell{}, true
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

// keep serves an admitted visitor whose session runs. Most requests need
// no store call: the ticket proves the session. A request that is due to
// renew it (Session.RenewTo) moves the visitor's active count to the later
// cell first, and only then is the ticket re-sealed, so no ticket ever
// holds a session its count does not cover (a node that dies mid-request
// loses nothing but the renewal). If the store cannot be reached, the
// session runs to its counted end, and the renewal is owed: made once the
// store answers again, while that count holds (replay.go). ok is false
// when the store says the session was ended (revoked): the visitor is
// then a new one.
func (e *Engine) keep(ctx context.Context, room string, ses usher.Session, t usher.Ticket, now time.Time, d usher.Decision) (_ usher.Decision, ok bool) {
	d.Outcome = usher.Admit
	d.Ticket = t
	if ses.RenewTo.IsZero() {
		return d, true
	}
	next := t
	next.CountedAt = countedAfter(now, t.CountedAt)
	next.Until, next.Cell = e.end(&d.Settings, now)
	op := usher.RenewOp{
		Now: now, Visitor: t.VisitorID, From: usher.Cell{Exp: t.Cell, At: t.CountedAt},
		To: next.Cell, Counted: next.CountedAt, Keep: next.Cell, By: e.renewBy(t.Cell),
	}
	if !e.brk.allow(now) {
		// Owed: made once the store answers again (replay.go).
		e.owe(room, op, now)
		return d, true
	}
	res, err := e.store.Renew(ctx, room, op)
	late := errors.Is(err, usher.ErrRenewLate)
	if late {
		// Slow or down, it does not say: other calls will.
		e.brk.neither()
	} else {
		e.brk.result(now, err)
	}
	switch {
	case late:
		// Its session runs to the end it was counted to.
		e.late.Add(1)
	case err != nil:
		e.opts.Logger.Warn("session not renewed", "room", room, "err", err)
		if usher.ErrorCode(err) == usher.EUnavailable {
			e.owe(room, op, now)
		}
	case res.Replay && res.Record.Admitted && res.Record.Cell == 0:
		return d, false // the session was ended (revoked)
	case res.Replay:
		// Another request of the visitor renewed it first: this one gets
		// the same ticket.
		d.Replay = true
		if rec := res.Record; rec.Admitted && rec.Cell > t.Cell {
			next.CountedAt, next.Cell = rec.At, rec.Cell
			next.Until = e.until(rec.Cell)
			d.Ticket, d.TicketChanged = next, true
		}
	default:
		e.flow.renewed(room, now, t.Cell, next.Cell)
		d.Ticket, d.TicketChanged = next, true
	}
	return d, true
}

// renewServed renews a session served from the store's record: a replay
// hands the visitor the session the store counted, which may be older than
// this request when the answer that carried it was lost (the node died
// after the commit, a call timed out after Redis ran it). The request is
// served as admitted, so it renews the session to session_duration after
// it, as every admitted request does; within the second of the record's
// own renewal it is already due no renewal (one store call per second at
// most, as for the visitor's own requests). ok is false when the store
// says the session was ended (revoked) meanwhile.
func (e *Engine) renewServed(ctx context.Context, room *usher.Room, d usher.Decision, now time.Time) (_ usher.Decision, ok bool) {
	if d.Outcome != usher.Admit || !d.Replay || !d.TicketChanged {
		return d, true
	}
	ses := room.Session(&d.Ticket, now)
	if !ses.Valid || ses.RenewTo.IsZero() {
		return d, true
	}
	if e.revoked.has(d.Ticket.VisitorID, now) {
		return d, false
	}
	return e.keep(ctx, room.ID, ses, d.Ticket, now, d)
}

// Status returns the room's live counters at now, with its free slots.
func (e *Engine) Status(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error) {
	st, err := e.store.Stats(ctx, room.ID, now)
	if err != nil {
		return usher.RoomStats{}, err
	}
	s := e.schedule(room, now).Settings
	st.Slots = max(0, min(int64(s.TotalActiveUsers)-st.Active, int64(s.NewUsersPerMinute)-st.AdmittedLastMinute))
	return st, nil
}
