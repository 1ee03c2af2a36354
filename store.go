package usher

import (
	"context"
	"time"
)

// Store holds a room's aggregate counters. Every method that changes state
// does it in one atomic operation, so that a shared implementation (Redis)
// needs one round trip per call. A room that the store has never seen has
// all counters at zero.
//
// Counters live in cells keyed by the unix second at which they expire: a
// visitor is counted in exactly one unexpired cell at a time and moves to a
// later cell when it is seen again, so sums over unexpired cells count
// distinct visitors, and visitors who leave drop out by themselves.
type Store interface {
	// Admit applies one admission decision for a new visitor or a waiter's
	// check-in: it computes the free slots and the live waiters ahead of the
	// visitor's bucket, admits the visitor when fewer live waiters are ahead
	// than slots are free (and the op allows it), and moves the visitor's
	// waiting count accordingly.
	Admit(ctx context.Context, room string, op AdmitOp) (AdmitResult, error)
	// Touch applies a batch of activity moves of admitted visitors.
	Touch(ctx context.Context, room string, now time.Time, moves []Move) error
	// Stats reads a room's counters at now without changing them.
	Stats(ctx context.Context, room string, now time.Time) (RoomStats, error)
	// LoadKeys returns the key ring kept in the store; an empty ring when
	// none was ever saved.
	LoadKeys(ctx context.Context) ([]Key, error)
	// SaveKeys keeps ring unless a ring is already saved, and returns the
	// ring that is saved now (the first writer wins).
	SaveKeys(ctx context.Context, ring []Key) ([]Key, error)
	// Close flushes what is pending and releases the store.
	Close() error
}

// Cell is where a visitor was counted: the cell's expiry second, and when
// the visitor was put there (so a store that lost recent writes in a crash
// knows not to take the visitor out of a cell it never reached).
type Cell struct {
	// Exp is the unix second at which the cell expires; zero means none.
	Exp int64
	// At is when the visitor was counted in the cell.
	At time.Time
}

// AdmitOp is the input of Store.Admit.
type AdmitOp struct {
	// Now is the decision's time.
	Now time.Time
	// TotalActiveUsers and NewUsersPerMinute are the room's limits.
	TotalActiveUsers  int
	NewUsersPerMinute int
	// SessionDuration is the room's session duration; a store that finds it
	// has lost counters holds the room as full for that long while the
	// sessions still running make themselves counted again.
	SessionDuration time.Duration
	// Bucket is the visitor's arrival bucket (unix second).
	Bucket int64
	// From is the waiting cell the visitor is counted in (zero Exp: none).
	From Cell
	// WaitExp is the waiting cell to count the visitor in if it still waits.
	WaitExp int64
	// ActiveExp is the active cell to count the visitor in if admitted.
	ActiveExp int64
	// NoAdmit keeps the visitor waiting whatever the slots (queue_all).
	NoAdmit bool
	// Force admits the visitor whatever the slots, still counting it
	// (passthrough).
	Force bool
	// Random replaces the FIFO rule with a draw: the visitor is admitted
	// when slots are free and Draw * (live waiters, the visitor included)
	// is below the free slots, so every live waiter has the same chance.
	Random bool
	// Draw is the visitor's draw for this window, in [0, 1).
	Draw float64
}

// AdmitResult is the output of Store.Admit. Counts are after the decision.
type AdmitResult struct {
	// Admitted reports whether the visitor was admitted.
	Admitted bool
	// Ahead is the number of live waiters in earlier buckets.
	Ahead int64
	// Stats are the room's counters after the decision.
	RoomStats
}

// Move is an admitted visitor's activity: out of one active cell and into
// a later one. A Move with a zero From.Exp only adds.
type Move struct {
	From Cell
	To   int64
}

// RoomStats are a room's live counters at a moment.
type RoomStats struct {
	// Active is the number of admitted visitors whose session is running.
	Active int64
	// Waiting is the number of live waiters.
	Waiting int64
	// AdmittedLastMinute is the number of admissions in the last 60 s.
	AdmittedLastMinute int64
	// Slots is min(total active - active, per minute - admitted last
	// minute), never below zero.
	Slots int64
}

// Key is one key of the ticket key ring.
type Key struct {
	// ID is written in the clear in every ticket sealed with the key.
	ID string
	// Secret is 32 bytes.
	Secret []byte
}
