package admission

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// MaxPendingRenewals is the most renewals an engine keeps to replay (see
// pendingRenewals): one per visitor, the oldest dropped past it.
const MaxPendingRenewals = 4096

// pendingRenewals are the session renewals an engine owed but could not
// make: the store was unreachable (the breaker open, or the call failed
// as unavailable) when an admitted visitor's request was due to renew its
// session. The request was let through on the session's counted end (see
// keep), but the visitor holds its session to session_duration after that
// request, while the store's count of it ends at the old cell: once that
// count expires, other nodes would give its place to someone else. So
// the engine remembers the renewal (per visitor, the latest only) and
// replays it as soon as the store answers again, each only while the cell
// it moves the count from still holds it (before RenewOp.By): a renewal
// past it might add a count the limit never allowed. A replayed renewal
// is the op the request would have made (Store.Renew is idempotent: a
// visitor whose record moved on meanwhile makes it a replay that changes
// nothing), and the visitor's next request picks up the renewed record
// through keep's replay path.
//
// Only requests of admitted sessions the ticket ring sealed, still
// running, queue a renewal, one per visitor id however many copies of a
// ticket come; the queue is bounded all the same, the oldest dropped.
type pendingRenewals struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *pendingRenewal, oldest first
	byKey map[renewalKey]*list.Element

	running atomic.Bool
	n       atomic.Int64 // entries queued (read without the lock)
	wg      sync.WaitGroup

	replayed atomic.Int64 // applied once the store answered
	dropped  atomic.Int64 // dropped for the bound
	expired  atomic.Int64 // their cell's count could have lapsed first
}

type renewalKey struct {
	room    string
	visitor [8]byte
}

// pendingRenewal is one renewal owed: op as the request built it (its Now
// is set when replayed).
type pendingRenewal struct {
	room string
	op   usher.RenewOp
}

// add queues p, unless a renewal of the same visitor counted later is
// queued already (two requests at once); it replaces an older one.
func (q *pendingRenewals) add(p pendingRenewal) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.order == nil {
		q.order = list.New()
		q.byKey = make(map[renewalKey]*list.Element)
	}
	if q.max <= 0 {
		q.max = MaxPendingRenewals
	}
	k := renewalKey{p.room, p.op.Visitor}
	if el, ok := q.byKey[k]; ok {
		if old := el.Value.(*pendingRenewal); !p.op.Counted.After(old.op.Counted) {
			return
		}
		q.order.Remove(el)
		delete(q.byKey, k)
	}
	for q.order.Len() >= q.max {
		oldest := q.order.Front()
		q.order.Remove(oldest)
		o := oldest.Value.(*pendingRenewal)
		delete(q.byKey, renewalKey{o.room, o.op.Visitor})
		q.dropped.Add(1)
	}
	q.byKey[k] = q.order.PushBack(&p)
	q.n.Store(int64(q.order.Len()))
}

// pop takes the oldest renewal queued.
func (q *pendingRenewals) pop() (pendingRenewal, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.order == nil || q.order.Len() == 0 {
		return pendingRenewal{}, false
	}
	el := q.order.Front()
	q.order.Remove(el)
	p := el.Value.(*pendingRenewal)
	delete(q.byKey, renewalKey{p.room, p.op.Visitor})
	q.n.Store(int64(q.order.Len()))
	return *p, true
}

// len returns the number of renewals queued.
func (q *pendingRenewals) len() int { return int(q.n.Load()) }

// owe queues the renewal op of room that the store could not be asked to
// make at now. A session counted in no cell (admitted uncounted by the
// fail mode open) is not: its first renewal once the store is back adds
// it, as the fail mode says, and a replay would add a count nobody let in.
func (e *Engine) owe(room string, op usher.RenewOp, now time.Time) {
	if op.From.Exp <= 0 || op.By.IsZero() || !now.Before(op.By) {
		return
	}
	e.pending.add(pendingRenewal{room: room, op: op})
}

// replaySoon starts replaying the renewals owed, at now, unless none are
// owed or a replay runs already. It is called after every store call that
// succeeded: the first after an outage starts the replay at once.
func (e *Engine) replaySoon(now time.Time) {
	if e.pending.len() == 0 || !e.pending.running.CompareAndSwap(false, true) {
		return
	}
	e.pending.wg.Add(1)
	go e.replayRenewals(now, time.Now())
}

// replayRenewals replays the renewals owed, oldest first, until none are
// left or the store fails again. Its clock is the one of the call that
// started it (start, at wall) moved on by the time elapsed.
func (e *Engine) replayRenewals(start, wall time.Time) {
	defer e.pending.wg.Done()
	defer e.pending.running.Store(false)
	ctx := context.Background()
	for !e.StoreDown() {
		p, ok := e.pending.pop()
		if !ok {
			return
		}
		now := start.Add(time.Since(wall))
		if !now.Before(p.op.By) {
			e.pending.expired.Add(1)
			continue
		}
		if e.revoked.has(p.op.Visitor, now) {
			continue
		}
		p.op.Now = now
		res, err := e.store.Renew(ctx, p.room, p.op)
		if errors.Is(err, usher.ErrRenewLate) {
			e.brk.neither()
			e.late.Add(1)
			continue
		}
		e.brk.result(now, err)
		switch {
		case err != nil && usher.ErrorCode(err) == usher.EUnavailable:
			e.owe(p.room, p.op, now) // again, once the store is back
			return
		case err != nil:
			e.opts.Logger.Warn("owed session renewal not replayed", "room", p.room, "err", err)
		case !res.Replay:
			e.pending.replayed.Add(1)
			e.flow.renewed(p.room, now, p.op.From.Exp, p.op.To)
		}
	}
}

// resume serves the ticket of v, whose session ended by the ticket, on the
// session a renewal made from that very ticket counted (rec, the store's
// record: an owed renewal replayed once the store answered, whose ticket
// the visitor never got), while that session runs. ok is false when rec
// is no such renewal: the visitor is then a new one. A copy of the ticket
// gains nothing the ticket itself could not: the record names the ticket
// it was renewed from, and a ticket renewed since is not it.
func (e *Engine) resume(ctx context.Context, room *usher.Room, v usher.Visit, rec usher.Record) (_ usher.Decision, ok bool, _ error) {
	t := v.Ticket
	if !rec.Admitted || rec.Cell <= v.Now.Unix() || rec.From.IsZero() || !rec.From.Equal(t.CountedAt) {
		return usher.Decision{}, false, nil
	}
	tk := *t
	tk.CountedAt, tk.Cell = rec.At, rec.Cell
	tk.Until = e.until(rec.Cell)
	ses := room.Session(&tk, v.Now)
	if !ses.Valid {
		return usher.Decision{}, false, nil
	}
	v.Ticket = &tk
	d, err := e.decide(ctx, room, v, ses)
	if err != nil || d.Outcome != usher.Admit || d.NewlyAdmitted || d.Ticket.VisitorID != tk.VisitorID {
		// Not served on that session (revoked meanwhile, suspended room):
		// as decided.
		return d, true, err
	}
	d.Replay = true // served on the store's record, as keep's replays are
	if !d.TicketChanged {
		// Renewed already: the visitor gets the ticket the store counted.
		d.Ticket, d.TicketChanged = tk, true
	}
	return d, true, nil
}

// ReplayedRenewals is the number of renewals the engine could not make
// while the store was unreachable and made once it answered again.
func (e *Engine) ReplayedRenewals() int64 { return e.pending.replayed.Load() }

// DroppedRenewals is the number of renewals owed that were not replayed:
// dropped for the bound (MaxPendingRenewals) or, the store answering too
// late, their session's count could have lapsed first.
func (e *Engine) DroppedRenewals() (bound, late int64) {
	return e.pending.dropped.Load(), e.pending.expired.Load()
}

// PendingRenewals is the number of renewals owed now.
func (e *Engine) PendingRenewals() int { return e.pending.len() }
