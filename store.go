package usher

import (
	"context"
	"time"
)

// MaxDrawEntries bounds the entries a store keeps of one draw.
const MaxDrawEntries = 1 << 20

// Store holds a room's aggregate counters and, for each live visitor, which
// of its tickets it counted last. Every method that changes state does it
// in one atomic operation, so that a shared implementation (Redis) needs one
// round trip per call. A room that the store has never seen has all
// counters at zero.
//
// Counters live in cells keyed by the unix second at which they expire: a
// visitor is counted in exactly one unexpired cell at a time and moves to a
// later cell when it is seen again, so sums over unexpired cells count
// distinct visitors, and visitors who leave drop out by themselves.
//
// # Tickets count once
//
// Each count makes a new ticket, named by its counted-at time (Ticket.
// CountedAt). The store remembers, per visitor, the ticket it counted last
// (a record: counted-at, cell, waiting or admitted) for as long as any of
// the visitor's tickets can still be presented (the Keep of the op that
// made it). A ticket older than the record is a replay (a copy, a request
// sent twice, a reload with a stale cookie): the store changes nothing and
// says so. So one waiting ticket is admitted at most once, a check-in or a
// renewal moves a count at most once, and no count is ever taken from a
// cell twice. A visitor with no record is taken out of the cell its ticket
// names, unless that count may have been lost (see each store).
//
// # An answer lost after the store applied it
//
// A call that fails (a timeout) may still have been applied: the visitor
// keeps the ticket it had, one count behind the store's record. The record
// also says which ticket its count was made from (Record.From), so that
// this ticket, and no other, can take the record over (AdmitOp.TakeOver):
// a waiting record is counted on from it as if the lost answer had been
// delivered, but no sooner than the op allows (when the record's own
// check-in would have been due), so that copies of a ticket are counted no
// more often than one ticket.
// An admitted record is never taken over (the engine delivers its session
// to that ticket instead).
type Store interface {
	// Admit applies one admission decision for a new visitor or a waiter's
	// check-in: it computes the free slots and the live waiters ahead of the
	// visitor's bucket, admits the visitor when fewer live waiters are ahead
	// than slots are free (and the op allows it), and moves the visitor's
	// waiting count accordingly. A replayed ticket changes nothing
	// (AdmitResult.Replay).
	Admit(ctx context.Context, room string, op AdmitOp) (AdmitResult, error)
	// Renew moves an admitted visitor's active count to a later cell (a
	// session renewed), or takes it out (To zero: a session that ended
	// early). A replayed ticket changes nothing (RenewResult.Replay); a
	// record whose Cell is zero says the session ended (RenewOp.End).
	Renew(ctx context.Context, room string, op RenewOp) (RenewResult, error)
	// Peek returns the live waiters ahead of bucket and the room's
	// counters at now, changing nothing (Slots are left zero: the caller
	// knows the limits).
	Peek(ctx context.Context, room string, now time.Time, bucket int64) (ahead int64, st RoomStats, err error)
	// Stats reads a room's counters at now without changing them.
	Stats(ctx context.Context, room string, now time.Time) (RoomStats, error)
	// Lapsed returns the number of waiters of room whose waiting count
	// expired by now (they stopped checking in: abandoned) since the store
	// began counting the room; 0 for a room it never saw. It only grows,
	// except that it starts again from zero when the store loses or
	// forgets the room's counters (and, embedded, at a restart). It is
	// not in RoomStats, which every decision copies.
	Lapsed(ctx context.Context, room string, now time.Time) (int64, error)
	// Spend marks id (a proof-of-work challenge) of room used until the
	// time until, and reports whether it was fresh: never used, or used
	// with an until that has passed. An error means the store could not
	// tell, and the caller must treat the id as used.
	Spend(ctx context.Context, room string, id [16]byte, until time.Time) (fresh bool, err error)
	// SaveDrawSeed keeps seed (a verifiable draw's secret, opaque to the
	// store) as draw id of room until keep, unless a seed of that draw is
	// kept already, and returns the seed kept now (the first writer wins,
	// so every node draws with the same one). See docs/fairness.md.
	SaveDrawSeed(ctx context.Context, room, id string, seed []byte, keep time.Time) ([]byte, error)
	// AddDrawEntry adds entry (opaque) to draw id of room, kept until
	// keep: a set, so an entry added twice is kept once. A store keeps at
	// most MaxDrawEntries entries a draw and refuses more (EUnavailable).
	AddDrawEntry(ctx context.Context, room, id string, entry []byte, keep time.Time) error
	// DrawEntries returns the entries of draw id of room, in no order
	// (none for a draw it does not know).
	DrawEntries(ctx context.Context, room, id string) ([][]byte, error)
	// UseInvite counts one use of invite id of room, remembered (durably)
	// until expires, and reports whether the count is within max.
	UseInvite(ctx context.Context, room string, id [16]byte, max int, expires time.Time) (ok bool, err error)
	// LoadKeys returns the key ring kept in the store; an empty ring when
	// none was ever saved.
	LoadKeys(ctx context.Context) ([]Key, error)
	// SaveKeys keeps ring unless a ring is already saved, and returns the
	// ring that is saved now (the first writer wins).
	SaveKeys(ctx context.Context, ring []Key) ([]Key, error)
	// LoadRuntime returns the runtime document (the settings changed
	// through the admin API, kept on top of the config file; opaque to the
	// store) and its version: version 0 and a nil document when none was
	// ever stored.
	LoadRuntime(ctx context.Context) (version int64, doc []byte, err error)
	// RuntimeVersion returns the runtime document's version alone (0:
	// none) in one cheap call: every node polls it.
	RuntimeVersion(ctx context.Context) (int64, error)
	// SwapRuntime replaces the runtime document with doc if its version is
	// still from, and appends audit to the audit log as the record of the
	// new version, in one atomic step that is durable before it returns.
	// It returns the new version: from+1, or above the last record of the
	// audit log when AppendAudit numbered records past from, or when from
	// is 0 (no document yet) any version above 0. When the version is no
	// longer from, it changes nothing and returns an *Error with code
	// EConflict.
	SwapRuntime(ctx context.Context, from int64, doc, audit []byte) (version int64, err error)
	// AppendAudit appends audit to the audit log as a record of a change
	// that is not a runtime document's (an autopilot's), leaving the
	// document and its version alone, so that no node re-applies it. The
	// record is numbered above every record and version before it (the
	// document's next version is numbered above it in turn), and is
	// durable before it returns; it returns the record's number.
	AppendAudit(ctx context.Context, audit []byte) (int64, error)
	// ReadAudit returns up to limit audit records, newest first, of the
	// versions below before (0: from the newest); none when the log is
	// empty. The log keeps the last AuditKeep records.
	ReadAudit(ctx context.Context, before int64, limit int) ([]AuditRecord, error)
	// AddHealth adds one node's counts of a room's origin responses in
	// second sec (unix seconds) to the room's. The store keeps a second's
	// counts about a minute (HealthKeep).
	AddHealth(ctx context.Context, room string, sec int64, h Health) error
	// Health returns the sum of every node's counts of second sec; zero
	// counts (nil Buckets) when none were added or they have expired.
	Health(ctx context.Context, room string, sec int64) (Health, error)
	// Governor returns the room's autopilot figure, shared by every node
	// (Version 0: none was ever set).
	Governor(ctx context.Context, room string) (GovernorFigure, error)
	// SwapGovernor sets the room's autopilot figure to next, as version
	// from+1, when its version is still from (0: none yet), in one atomic
	// step; either way it returns the figure in force after it (another
	// node's when the version had moved on: the first writer wins).
	SwapGovernor(ctx context.Context, room string, from int64, next GovernorFigure) (GovernorFigure, error)
	// AddAnalytics merges deltas into room's analytics: into the point of
	// each delta's minute and of the hour that holds it, adding Add fields
	// and keeping the largest of Max fields, in one atomic step per call.
	// Points older than their retention (AnalyticsMinuteKeep,
	// AnalyticsHourKeep) are dropped, so storage stays bounded. A delta
	// whose minute is not whole, or that would make a point hold more than
	// AnalyticsMaxFields fields, is refused with EInvalid and nothing is
	// merged.
	AddAnalytics(ctx context.Context, room string, deltas []AnalyticsDelta) error
	// ReadAnalytics returns room's points of step (time.Minute or
	// time.Hour) whose start is in [from, to), oldest first; steps with
	// nothing counted are left out (none at all for an unknown room).
	ReadAnalytics(ctx context.Context, room string, step time.Duration, from, to time.Time) ([]AnalyticsPoint, error)
	// Close flushes what is pending and releases the store.
	Close() error
}

// HealthKeep is how long a store keeps a second's health counts.
const HealthKeep = time.Minute

// HealthBuckets is the most latency buckets a Health carries (those of
// internal/autopilot); a store ignores any beyond.
const HealthBuckets = 216

// Cell is where a ticket says its visitor was counted: the cell's expiry
// second, and when the visitor was put there (the ticket's CountedAt,
// which also names the ticket).
type Cell struct {
	// Exp is the unix second at which the cell expires; zero means none
	// (the visitor was not counted).
	Exp int64
	// At is when the visitor was counted in the cell; zero for a visitor
	// that has no ticket.
	At time.Time
}

// AdmitOp is the input of Store.Admit.
type AdmitOp struct {
	// Now is the decision's time.
	Now time.Time
	// Visitor is the visitor's id (Ticket.VisitorID).
	Visitor [8]byte
	// Counted is the counted-at time of the ticket this decision issues;
	// it must be after From.At. The store records it.
	Counted time.Time
	// Keep is how long (a unix second) the store must remember the visitor
	// after this op: until no ticket of it can be presented any more.
	Keep int64
	// TotalActiveUsers and NewUsersPerMinute are the room's limits.
	TotalActiveUsers  int
	NewUsersPerMinute int
	// SessionDuration is how long a session is counted after the request
	// that counted it (usher.SessionHold: session_duration, plus a renewal
	// step less a second with renewals on); a store that finds it has lost
	// counters holds the room as full for that long (and its recovery
	// margin) while the sessions still running make themselves counted
	// again.
	SessionDuration time.Duration
	// Bucket is the visitor's arrival bucket (unix second): the bucket it
	// is counted in if it still waits.
	Bucket int64
	// FromBucket, when not zero, is the bucket From's cell counts the
	// visitor in, when that is not Bucket (a joining visitor's first
	// check-in: see usher.Ticket.Joining).
	FromBucket int64
	// From is the ticket presented: the waiting cell it names and its
	// counted-at time (zero: a visitor without a ticket).
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
	// DrawBefore, when not zero, leaves the waiters counted in buckets from
	// DrawBefore on (joining visitors, and visitors at the back of the
	// line) out of the live waiters of a draw: they take no share of it.
	DrawBefore int64
	// Joining admits the visitor only when nobody waits and slots are free
	// (random queueing: a visitor without a ticket gets no draw while
	// others wait; it draws from its first check-in on).
	Joining bool
	// Client, when its PerMinute is not zero, applies a per-client limit
	// to a visitor without a ticket: the store counts the new ticket
	// against the client's key and reports whether the client is over.
	Client ClientOp
	// TakeOver, when not zero, lets the ticket presented take over the
	// visitor's waiting record when that record was counted from it
	// (Record.From equals From.At: an answer the visitor never got) at or
	// before TakeOver, in a cell that expires at or before TakeOverCell
	// (a unix second; zero: any cell): the op is then applied as if From
	// were the record's own ticket (AdmitResult.TookOver), and the new
	// record is still counted from From.At. Otherwise such a ticket is a
	// replay.
	TakeOver     time.Time
	TakeOverCell int64
	// Unproven marks a new visitor (no ticket) that brought no proof of
	// work to a room that asks for one: it may only be admitted at once
	// into a free slot (Force too admits it only into one). When it would not be admitted, the store counts
	// nothing and remembers nothing (no waiting count, no record, nothing
	// against its client's limit) and answers AdmitResult.Unproven: the
	// caller asks for the proof instead of a place. So the choice between
	// "admitted at once" and "pay first" is made in the same atomic step as
	// the admission, never on a status read earlier.
	Unproven bool
	// Shards is the room's Settings.Shards: a store that can spread a
	// room's line over several shards (Redis) does so; others ignore it.
	Shards int
}

// ClientOp is a per-client limit on new tickets.
type ClientOp struct {
	// Key identifies the client (a keyed hash of its address prefix).
	Key uint64
	// PerMinute is the most new tickets the key may get in a minute; zero
	// applies no limit.
	PerMinute int
	// NetworkKey identifies the client's network (a keyed hash of a
	// shorter prefix), counted apart from clients' keys; zero: none.
	NetworkKey uint64
	// NetworkPerMinute is the most new tickets the network may get in a
	// minute, all its clients together; zero applies no network limit. A
	// ticket over either limit is counted in neither.
	NetworkPerMinute int
	// Refuse gives an over-limit client no ticket at all: it is not
	// counted as a waiter (the limit's reject mode).
	Refuse bool
	// Back is the bucket an over-limit visitor waits in otherwise: the
	// back of the line.
	Back int64
}

// AdmitResult is the output of Store.Admit. Counts are after the decision.
type AdmitResult struct {
	// Admitted reports whether the visitor was admitted (by this op; or,
	// with Replay, whether the store counts it as admitted).
	Admitted bool
	// Replay reports a ticket older than the one the store counted last
	// for the visitor: nothing changed. Record is what the store holds.
	Replay bool
	// TookOver reports that the ticket presented took over the store's
	// later record (AdmitOp.TakeOver): the op was applied.
	TookOver bool
	// Record is the store's record of the visitor after the op (zero when
	// it keeps none).
	Record Record
	// OverClient reports that the visitor's client is over its per-client
	// limit: the visitor was not admitted (and, with Client.Refuse, not
	// counted).
	OverClient bool
	// Unproven reports that the op was Unproven and the visitor would
	// not have been admitted at once: nothing changed.
	Unproven bool
	// Ahead is the number of live waiters in earlier buckets.
	Ahead int64
	// Stats are the room's counters after the decision.
	RoomStats
}

// Record is what a store remembers of a visitor: the ticket it counted
// last.
type Record struct {
	// At is the counted-at time of that ticket.
	At time.Time
	// Cell is the cell it was counted in (zero: none).
	Cell int64
	// Admitted reports whether it was an admitted ticket.
	Admitted bool
	// From is the counted-at time of the ticket presented when the store
	// made this record (AdmitOp.From.At, RenewOp.From.At): the ticket a
	// visitor still holds when the answer that carried the record's ticket
	// was lost. Zero when the record was made without one (a newcomer, a
	// revocation) or by a store that did not keep it.
	From time.Time
}

// RenewOp is the input of Store.Renew.
type RenewOp struct {
	// Now is the request's time.
	Now time.Time
	// Visitor is the visitor's id.
	Visitor [8]byte
	// From is the ticket presented: the active cell it names (zero Exp:
	// not counted) and its counted-at time.
	From Cell
	// To is the active cell to count the visitor in; zero takes it out.
	To int64
	// Counted is the counted-at time of the ticket this renewal issues.
	Counted time.Time
	// Keep is how long (a unix second) the store must remember the visitor.
	Keep int64
	// End ends the visitor's session whatever ticket is presented (a
	// revocation): it is taken out of the cell the store counts it in, and
	// its record says the session ended (Cell zero), so that no ticket of
	// it renews again. From is ignored. When the record says so already,
	// nothing changes and the result is a Replay: a session is ended once,
	// however many times it is revoked, on any node.
	End bool
	// Lapsed records that the session of the visitor ended by itself (a
	// ticket whose session is over came back): unless the store's record
	// of the visitor is an admitted session still counted (Cell after
	// Now: another ticket of it renewed it) or already says the session
	// ended (Cell zero), the record says the session ended (Cell zero,
	// kept until Keep); otherwise nothing changes and the result is a
	// Replay. So "this op ended the session" is true of one op only, which
	// is how the end of a session is told once. From and To are ignored.
	Lapsed bool
	// By, when not zero, is the latest moment (on the caller's clock) the
	// renewal may be known applied: past it, the session's count may have
	// lapsed in the store before the renewal reached it, and a place
	// counted free meanwhile may have been given to someone else. A store
	// whose calls travel (Redis) answers ErrRenewLate when its answer
	// comes after By: the caller keeps the ticket it had, whose session
	// ends as counted. The renewal may still have been applied: the
	// session is then counted longer than it runs, never shorter.
	By time.Time
}

// ErrRenewLate is a store's answer to a renewal that came back after its
// RenewOp.By (see there).
var ErrRenewLate = Errorf(EUnavailable, "the session's renewal was answered too late to be sure it was counted in time")

// RenewResult is the output of Store.Renew.
type RenewResult struct {
	// Replay reports a ticket older than the one the store counted last:
	// nothing changed, and Record says what the store holds.
	Replay bool
	// Record is the store's record of the visitor after the op.
	Record Record
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
