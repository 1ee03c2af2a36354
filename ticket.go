package usher

import "time"

// TicketState is where a visitor stands.
type TicketState uint8

// The ticket states. The zero value is not a valid state.
const (
	// Waiting visitors are in the queue.
	Waiting TicketState = 1
	// Admitted visitors may reach the origin until their session ends.
	Admitted TicketState = 2
)

// String returns "waiting" or "admitted".
func (s TicketState) String() string {
	switch s {
	case Waiting:
		return "waiting"
	case Admitted:
		return "admitted"
	}
	return "invalid"
}

// Ticket is the visitor's state. It travels sealed in a cookie; the store
// keeps aggregate counters and, per live visitor, which of its tickets it
// counted last (so that a copied or replayed ticket counts once).
//
// Times are kept to the millisecond by the codec.
type Ticket struct {
	// VisitorID is random and identifies the visitor in the store, logs and
	// analytics.
	VisitorID [8]byte
	// State is Waiting or Admitted.
	State TicketState
	// Back marks a visitor sent to the back of the line by a per-client
	// limit: in a random room it only goes in when there is room for every
	// live waiter.
	Back bool
	// Joining marks a newcomer to a random room that has not checked in
	// yet: it is counted in its joining bucket (JoinBucket), outside the
	// pool a draw's chance is shared in, until its first check-in.
	Joining bool
	// ArrivedAt is when the visitor first reached the room; its second is the
	// arrival bucket and never changes while the visitor waits.
	ArrivedAt time.Time
	// AdmittedAt is when the visitor was admitted (zero while waiting).
	AdmittedAt time.Time
	// CountedAt is when the visitor was last counted: a waiter's last
	// check-in, or an admitted visitor's last counted activity. It also
	// names this ticket in the store: every count makes a ticket with a
	// later CountedAt, and a ticket older than the one the store counted
	// last is a replay.
	CountedAt time.Time
	// Cell is the unix second at which the counter the visitor was last
	// counted in expires (waiting or active, by State). Zero: not counted
	// (a decision the fail mode made without the store).
	Cell int64
	// Until is when an admitted visitor's session ends as counted: the
	// session holds while now is before Until (and before any cap the
	// settings in force put on it; see Room.Session). Zero while waiting.
	Until time.Time
	// NextCheckIn is the earliest time a waiter's next check-in counts; an
	// earlier one changes nothing.
	NextCheckIn time.Time
	// Jitter is the visitor's fixed offset on the refresh interval, so that
	// waiters do not check in in step.
	Jitter time.Duration
	// Place, when not zero, is the visitor's place in line as an arrival
	// second, instead of ArrivedAt's: a pre-queued visitor's place at the
	// event's start (shuffled or in arrival order), or the back of the line
	// for a client over its per-client limit.
	Place int64
	// DrewAt is when the visitor last took part in a random draw (random
	// queueing: one draw per refresh window).
	DrewAt time.Time
	// Position is the place in line the visitor was last told while it
	// waited (kept once it is admitted: the admission token says it); 0
	// when it never waited.
	Position int64
	// Announced, when not zero, is the wait (from ArrivedAt) that the
	// visitor's first waiting page with a known estimate announced: kept
	// while it waits, cleared at admission, so that the estimate's error
	// is measured. (A duration, not a time: the ticket is copied on every
	// admitted request, and this keeps it the size it was.)
	Announced time.Duration
	// Binding, when not zero, ties the ticket to the client that got it (a
	// keyed hash of its address prefix and user agent, as the room's
	// ticket_binding says): on another client it opens as a new visitor.
	Binding uint64
}

// Bucket is the visitor's place in line: the arrival second, or Place.
func (t *Ticket) Bucket() int64 {
	if t.Place != 0 {
		return t.Place
	}
	return t.ArrivedAt.Unix()
}

// JoinSpan is how far after its arrival second a joining visitor is
// counted (Ticket.Joining): behind every arrival and every visitor at the
// back of the line.
const JoinSpan = 48 * time.Hour

// JoinBucket is the bucket a joining visitor is counted in.
func (t *Ticket) JoinBucket() int64 { return t.ArrivedAt.Unix() + int64(JoinSpan/time.Second) }

// CeilSecond rounds t up to the next whole second (t itself when whole).
func CeilSecond(t time.Time) time.Time {
	if t.Nanosecond() == 0 {
		return t
	}
	return time.Unix(t.Unix()+1, 0)
}
