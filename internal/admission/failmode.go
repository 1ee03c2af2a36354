package admission

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// Breaker defaults: after BreakerFailures store failures in a row the
// engine stops calling the store for BreakerCooldown and applies the fail
// mode at once, then lets one call through to probe.
const (
	BreakerFailures = 3
	BreakerCooldown = 2 * time.Second
)

// breaker is a circuit breaker over the store's decisions.
type breaker struct {
	mu       sync.Mutex
	failures int
	openTill time.Time
	probing  bool
	down     bool // the store is considered unavailable (logged once)
	log      *slog.Logger
	onChange func(open bool, err error) // Options.OnBreaker
	onOK     func(now time.Time)        // after every call that succeeded

	failModeDecisions atomic.Int64
	storeErrors       atomic.Int64
}

// allow reports whether to call the store now.
func (b *breaker) allow(now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures < BreakerFailures {
		return true
	}
	if now.Before(b.openTill) || b.probing {
		return false
	}
	b.probing = true
	return true
}

// result records the outcome of a store call, and tells onChange (outside
// the lock) when the breaker opened or closed.
func (b *breaker) result(now time.Time, err error) {
	if changed, open := b.record(now, err); changed && b.onChange != nil {
		b.onChange(open, err)
	}
	if err == nil && b.onOK != nil {
		b.onOK(now)
	}
}

func (b *breaker) record(now time.Time, err error) (changed, open bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
	if err == nil {
		if b.down {
			b.down = false
			changed = true
			b.log.Info("store is available again; decisions use it", "after_failures", b.failures)
		}
		b.failures = 0
		return changed, false
	}
	b.storeErrors.Add(1)
	b.failures++
	if b.failures >= BreakerFailures {
		b.openTill = now.Add(BreakerCooldown)
		if !b.down {
			b.down = true
			changed = true
			b.log.Error("store unavailable; applying the fail mode", "err", err, "cooldown", BreakerCooldown)
		}
	}
	return changed, true
}

// neither records a store call that says nothing of the store's health: a
// renewal given up at its By (usher.ErrRenewLate), which a slow store and
// a store that is down both give. It ends a probe without opening or
// closing the breaker, and leaves the count of failures in a row as it
// was.
func (b *breaker) neither() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.probing = false
}

// StoreDown reports whether the engine currently treats the store as
// unavailable.
func (e *Engine) StoreDown() bool {
	e.brk.mu.Lock()
	defer e.brk.mu.Unlock()
	return e.brk.down
}

// LostAnswers is the number of decisions on a ticket one answer behind the
// store's record (an answer lost after the store applied it): the ticket
// took the record over, got the admission the store had counted, or, that
// session over, started over as a new visitor. Within the replay grace a
// delivered admission is a parallel request's and is not counted.
func (e *Engine) LostAnswers() int64 { return e.lost.Load() }

// LateRenewals is the number of session renewals the store answered too
// late to be sure the session's count had not lapsed first
// (usher.ErrRenewLate): their sessions ran to the end they were counted to.
func (e *Engine) LateRenewals() int64 { return e.late.Load() }

// LapsedCheckIns is the number of check-ins of waiters whose waiting
// count had expired by the time they were decided: they came back later
// than their grace allowed (a page that loaded slowly, a tab woken from
// sleep, a store that answered late), and later arrivals may have gone in
// ahead of them meanwhile.
func (e *Engine) LapsedCheckIns() int64 { return e.lapsedIns.Load() }

// FailModeDecisions is the number of decisions made by the fail mode.
func (e *Engine) FailModeDecisions() int64 { return e.brk.failModeDecisions.Load() }

// StoreErrors is the number of failed store calls.
func (e *Engine) StoreErrors() int64 { return e.brk.storeErrors.Load() }

// failDecision decides without the store. Open admits the visitor
// uncounted: its ticket names no cell (its session ends when its Until
// says), so its first renewal once the store is back only adds it, and the
// room is back under its limits within one session. Closed keeps the
// visitor waiting with its place (a waiter's ticket is unchanged; a new
// visitor's is issued with its arrival, so that it keeps it) and no
// position shown, since none is known.
func (e *Engine) failDecision(room string, d usher.Decision, tk usher.Ticket, fresh bool, s *usher.Settings, now time.Time) usher.Decision {
	e.brk.failModeDecisions.Add(1)
	d.Degraded = true
	counted := countedAfter(now, tk.CountedAt)
	if e.opts.FailOpen {
		tk.State = usher.Admitted
		tk.AdmittedAt = counted
		tk.CountedAt = counted
		tk.Until = usher.SessionUntil(s, now)
		tk.Cell = 0
		tk.NextCheckIn = time.Time{}
		tk.DrewAt = time.Time{}
		tk.Back = false
		tk.Joining = false
		if fresh {
			e.observeArrived(room, now)
		}
		e.observeAdmitted(room, &tk, now)
		tk.Announced = 0
		d.Outcome = usher.Admit
		d.NewlyAdmitted = true
		d.Ticket = tk
		d.TicketChanged = true
		return d
	}
	d.Outcome = usher.Wait
	d.RefreshAfter = checkInAfter(s.RefreshInterval, tk.Jitter)
	if fresh {
		e.observeArrived(room, now)
		tk.CountedAt = counted
		tk.NextCheckIn = now.Add(d.RefreshAfter)
	}
	d.Ticket = tk
	// A waiter keeps its ticket (and the cell it is counted in); a new
	// visitor gets one with its arrival.
	d.TicketChanged = fresh
	return d
}
