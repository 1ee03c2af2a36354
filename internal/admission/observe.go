package admission

import (
	"time"

	"github.com/usherhq/usher"
)

// Happening is what an Observer is told of. Abandoned waiters are not
// among them: a waiter who leaves just stops checking in, so only the
// store sees its place lapse (usher.Store.Lapsed).
type Happening uint8

// The happenings.
const (
	// Arrived: a new visitor got its first ticket (waiting or admitted at
	// once).
	Arrived Happening = iota + 1
	// Admitted: a visitor was counted in, once per visitor (a replay, a
	// renewal or an admitted visitor's request is not an admission).
	// Queued is its time from arrival to admission; Announced, when not
	// zero, the wait its first waiting page announced.
	Admitted
	// Ended: an admitted visitor came back after its session ended; OnOrigin
	// is its time from admission to its last counted activity.
	Ended
	// Revoked: a session was ended at once (an origin's revoke).
	Revoked
)

// Observation is one happening in a room. It is passed by value and holds
// no pointers, so that telling an Observer allocates nothing.
type Observation struct {
	What Happening
	// At is the decision's time.
	At time.Time
	// Queued is an admitted visitor's time in the queue.
	Queued time.Duration
	// Announced is the wait the visitor's first waiting page announced
	// with a known estimate (zero: none was, or admitted at once).
	Announced time.Duration
	// OnOrigin is an ended session's time on the origin (zero: unknown).
	OnOrigin time.Duration
	// Forecast, when not zero, is what the limits alone forecast for an
	// admitted visitor whose first page was cold (the serving counter had
	// no weight in it): Announced without the learned factor. Queued over
	// Forecast is what the room learns from (learn.go).
	Forecast time.Duration
}

// Observer is told of each happening. Observe is called on the decision's
// goroutine, so it must be quick and must not block; it must be safe for
// concurrent use.
type Observer interface {
	Observe(room string, o Observation)
}

// Observers tells every Observer of the list.
type Observers []Observer

// Observe implements Observer.
func (os Observers) Observe(room string, o Observation) {
	for _, ob := range os {
		ob.Observe(room, o)
	}
}

// The observe helpers build their Observation themselves and are kept out
// of line: built in Decide, the values would grow its frame, which every
// admitted request pays for (see docs/benchmarks.md).

// observe tells the engine's observer, if any.
//
//go:noinline
func (e *Engine) observe(room string, o Observation) {
	if e.opts.Observer != nil {
		e.opts.Observer.Observe(room, o)
	}
}

// observeArrived tells of a new visitor's first ticket.
//
//go:noinline
func (e *Engine) observeArrived(room string, now time.Time) {
	if e.opts.Observer != nil {
		e.opts.Observer.Observe(room, Observation{What: Arrived, At: now})
	}
}

// observeEnded tells of an admitted visitor back after its session ended
// (unless this node revoked it: that was told already).
//
//go:noinline
func (e *Engine) observeEnded(room string, t *usher.Ticket, now time.Time) {
	if e.opts.Observer != nil && !e.revoked.has(t.VisitorID, now) {
		e.opts.Observer.Observe(room, Observation{What: Ended, At: now, OnOrigin: max(0, t.CountedAt.Sub(t.AdmittedAt))})
	}
}

// observeAdmitted tells of tk's admission at now.
//
//go:noinline
func (e *Engine) observeAdmitted(room string, tk *usher.Ticket, now time.Time) {
	if e.opts.Observer == nil {
		return
	}
	o := Observation{What: Admitted, At: now, Queued: max(0, now.Sub(tk.ArrivedAt))}
	o.Announced = tk.Announced
	if tk.Announced > 0 {
		if f, cold := e.lines.coldFactor(room, tk.ArrivedAt); cold {
			o.Forecast = forecastOf(tk.Announced, f)
		}
	}
	e.opts.Observer.Observe(room, o)
}
