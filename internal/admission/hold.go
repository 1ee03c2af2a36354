package admission

import (
	"time"

	"github.com/usherhq/usher"
)

// Places free at whole seconds: an active cell expires at its second, and
// the rate window lets a second's admissions out at a whole second. A
// check-in that comes in the middle of a second in which the room is
// full cannot go in before the next whole second, whatever its place;
// the places that free then go to the waiters who check in after it, each
// up to a second late (with a page that refreshes in whole seconds, a
// waiter's check-ins keep the fraction of a second of its first). Held to
// the next whole second, a near-front check-in is decided the moment
// places free, and the waiter's next check-ins come just after a whole
// second too.

// HoldMargin is the least time a held check-in's waiting count must still
// run when it is decided: the hold never lets a waiter's place lapse.
const HoldMargin = 500 * time.Millisecond

// Hold returns how long to hold a visit to room with ticket t at now
// before deciding it (zero: decide at once). It holds only the check-in
// of a FIFO waiter near the front (one its ticket told to check in twice
// as often: see nearFront) in a second in which a decision of this engine
// already found a waiter of its bucket or an earlier one behind the free
// slots (or no slot free): it cannot go in before the next whole second
// (see flows.refused), and only to then (the next whole second, or the
// moment the rate window's oldest second leaves it), while the waiter's
// count lasts. It makes no store call and changes nothing; the
// caller holds the request (or not: Hold is advice) and then calls Decide
// with the time it wakes at.
func (e *Engine) Hold(room *usher.Room, t *usher.Ticket, now time.Time) time.Duration {
	if t == nil || t.State != usher.Waiting || t.CountedAt.IsZero() || t.NextCheckIn.IsZero() || t.Back || t.Joining {
		return 0
	}
	if now.Before(t.NextCheckIn.Add(-tolerance(t))) {
		return 0 // early: decided by a Peek, nothing to gain
	}
	// A check-in within its tolerance but before its time is held to its
	// time (EarlyHold). The refusal then: it is the cheap test, and most
	// check-ins fail it.
	early := t.NextCheckIn.Sub(now)
	whole := time.Duration(0)
	next := e.flow.behind(room.ID, now, t.Bucket())
	if !next.IsZero() && !next.Add(HoldMargin).After(time.Unix(t.Cell, 0)) {
		whole = next.Sub(now)
	}
	if early <= 0 && whole <= 0 {
		return 0
	}
	sched := e.schedule(room, now)
	s := &sched.Settings
	switch {
	case s.Suspended, s.QueueAll, s.QueueingMethod != usher.FIFO && s.QueueingMethod != "",
		sched.Phase != usher.NoEvent && sched.Phase != usher.Running:
		return 0
	case t.NextCheckIn.Sub(t.CountedAt) > checkInAfter(s.RefreshInterval/2, t.Jitter/2):
		whole = 0 // not near the front at its last check-in
	case sched.Autopilot.Enabled:
		// Its limits move at any moment, freeing places between whole
		// seconds: a refusal says nothing of the rest of the second.
		whole = 0
	}
	if whole > max(early, 0) && !e.flow.hold(room.ID, next) {
		whole = 0 // as many held for that moment as can go in then
	}
	return max(early, whole, 0)
}

// EarlyHold: a FIFO check-in that comes before its ticket's NextCheckIn, within its tolerance (see tolerance), is held to
// NextCheckIn. The tolerance is there for clocks and page timing, not to
// let a client polling fast check in a quarter of an interval early each
// time: decided at once, such a client came by first after a place freed
// about two times in three against a page of the same second that waits
// its turn (TestE2EAdversaryFastCheckInTies: 32 of 48 ties). Held, it is
// decided when the page's check-in is due, and its next one is due an
// interval after that, as the page's. A page never comes early (it waits
// its interval from the answer, and NextCheckIn counts from the decision),
// so only a client that checks in before its time is held for it (and,
// across nodes, the clock difference).
