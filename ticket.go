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

// Ticket is the visitor's state. It travels sealed in a cookie: the server
// keeps only aggregate counters, never a record per visitor.
//
// Times are kept to the millisecond by the codec.
type Ticket struct {
	// VisitorID is random and identifies the visitor in logs and analytics.
	VisitorID [8]byte
	// State is Waiting or Admitted.
	State TicketState
	// ArrivedAt is when the visitor first reached the room; its second is the
	// arrival bucket and never changes while the visitor waits.
	ArrivedAt time.Time
	// AdmittedAt is when the visitor was admitted (zero while waiting).
	AdmittedAt time.Time
	// CountedAt is when the visitor was last counted: a waiter's last
	// check-in, or an admitted visitor's last counted activity.
	CountedAt time.Time
	// Cell is the unix second at which the counter the visitor was last
	// counted in expires (waiting or active, by State). Zero: not counted.
	Cell int64
	// NextCheckIn is the earliest time a waiter's next check-in counts.
	NextCheckIn time.Time
	// Jitter is the visitor's fixed offset on the refresh interval, so that
	// waiters do not check in in step.
	Jitter time.Duration
	// Place, when not zero, is the visitor's place in line as an arrival
	// second, instead of ArrivedAt's: a pre-queued visitor's place at the
	// event's start (shuffled or in arrival order).
	Place int64
	// DrewAt is when the visitor last took part in a random draw (random
	// queueing: one draw per refresh window).
	DrewAt time.Time
}

// Bucket is the visitor's place in line: the arrival second, or Place.
func (t *Ticket) Bucket() int64 {
	if t.Place != 0 {
		return t.Place
	}
	return t.ArrivedAt.Unix()
}

// SessionEnd is when an admitted ticket's session ends: SessionDuration
// after its last counted activity (or after admission when renewal is
// disabled), rounded up to the whole second, so that every request the
// visitor made since it was last counted is covered.
func (t *Ticket) SessionEnd(s *Settings) time.Time {
	from := t.CountedAt
	if s.DisableSessionRenewal || from.IsZero() {
		from = t.AdmittedAt
	}
	return CeilSecond(from.Add(s.SessionDuration))
}

// SessionValid reports whether an admitted ticket still holds a session at
// now.
func (t *Ticket) SessionValid(s *Settings, now time.Time) bool {
	if t.State != Admitted || t.AdmittedAt.IsZero() {
		return false
	}
	// A ticket from the future was not made by this clock: refuse it.
	if t.AdmittedAt.After(now.Add(time.Minute)) {
		return false
	}
	return now.Before(t.SessionEnd(s))
}

// CeilSecond rounds t up to the next whole second (t itself when whole).
func CeilSecond(t time.Time) time.Time {
	if t.Nanosecond() == 0 {
		return t
	}
	return time.Unix(t.Unix()+1, 0)
}
