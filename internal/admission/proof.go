package admission

import (
	"context"
	"time"

	"github.com/usherhq/usher"
)

// prove spends the proof of work a new visitor brought, if any, and
// reports whether it was good: a solution earns one new visitor, once.
// It is called only when the decision is about to make a new visitor,
// before the store counts it, with a context no hang-up cancels: a
// solution spent is always followed by the decision it paid for (unless
// the store fails, when the visitor loses the solution rather than gain
// two places: the safe side).
func (e *Engine) prove(ctx context.Context, room string, p *usher.Proof) (bool, error) {
	if p.Spend == nil {
		return false, nil
	}
	ok, err := p.Spend(ctx)
	if err != nil {
		e.opts.Logger.Warn("proof of work not spent", "room", room, "err", err)
		return false, usher.Errorf(usher.EUnavailable, "spend proof of work: %v", err)
	}
	return ok, nil
}

// failUnproven is the fail mode's decision for a visitor the store could
// not decide on: failDecision, except that a new visitor without a proof
// of work in a fail-closed room is asked for one. The waiting ticket the
// fail mode would give it carries its arrival and would hold a place
// once the store is back, unpaid for. (With fail_open the fail mode
// admits new visitors uncounted, proof or not: that is its choice.)
func (e *Engine) failUnproven(room string, d usher.Decision, tk usher.Ticket, fresh, unproven bool, s *usher.Settings, now time.Time) usher.Decision {
	if unproven && !e.opts.FailOpen {
		e.brk.failModeDecisions.Add(1)
		d.Degraded = true
		d.Outcome = usher.Challenge
		return d
	}
	return e.failDecision(room, d, tk, fresh, s, now)
}

// EndedWindow is how long after a session's end a request with its ticket
// still tells of the end (Decision.SessionEnded, the Ended observation):
// the store remembers that the end was told for as long, so that it is
// told once, and forgets it then (its memory does not grow with old
// tickets). A ticket back later is a new visitor and tells nothing.
const EndedWindow = time.Hour

// lapse tells the store that the session of t, an admitted ticket whose
// session ses has ended, is over, and reports whether this request is
// the first to tell it (the Ended observation is then made): once per
// session, on any node, and never for a revoked session (the revocation
// told its end) nor for a session another ticket of the visitor renewed.
// A store that cannot be reached tells nothing. rec is the store's record
// of the visitor when it says the session was not ended by this request.
func (e *Engine) lapse(ctx context.Context, room *usher.Room, t *usher.Ticket, ses usher.Session, now time.Time) (ended bool, rec usher.Record) {
	if ses.End.IsZero() || now.Sub(ses.End) > EndedWindow || e.revoked.has(t.VisitorID, now) || !e.brk.allow(now) {
		return false, usher.Record{}
	}
	res, err := e.store.Renew(ctx, room.ID, usher.RenewOp{Now: now, Visitor: t.VisitorID, Lapsed: true,
		Counted: now.Truncate(time.Millisecond), Keep: ses.End.Add(EndedWindow).Unix() + 1})
	e.brk.result(now, err)
	if err != nil {
		e.opts.Logger.Warn("session end not recorded", "room", room.ID, "err", err)
		return false, usher.Record{}
	}
	if res.Replay {
		return false, res.Record
	}
	e.observeEnded(room.ID, t, now)
	return true, usher.Record{}
}
