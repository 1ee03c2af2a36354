package usher

import (
	"context"
	"net/netip"
	"time"
)

// Outcome is what the gate does with a request.
type Outcome uint8

// The outcomes.
const (
	// Pass sends the request to the origin untouched: no room, a suspended
	// room, or a bypass rule.
	Pass Outcome = iota + 1
	// Admit sends the request to the origin as an admitted visitor's.
	Admit
	// Wait answers with the waiting page.
	Wait
	// Turn answers with the reject page.
	Turn
	// Challenge answers with a proof-of-work challenge: the visitor gets
	// no ticket until it brings a solution.
	Challenge
)

// String names the outcome for logs and metrics.
func (o Outcome) String() string {
	switch o {
	case Pass:
		return "pass"
	case Admit:
		return "admit"
	case Wait:
		return "wait"
	case Turn:
		return "reject"
	case Challenge:
		return "challenge"
	}
	return "invalid"
}

// Decision is the admission engine's answer for one visitor's request.
type Decision struct {
	// Outcome is Admit, Wait or Turn.
	Outcome Outcome
	// Ticket is the visitor's ticket after the decision.
	Ticket Ticket
	// TicketChanged reports whether Ticket must be sent back (Set-Cookie).
	TicketChanged bool
	// NewlyAdmitted reports whether this decision admitted the visitor.
	NewlyAdmitted bool
	// SessionEnded reports that the visitor brought the ticket of a
	// session that had ended, and that this decision is the one that told
	// the store so: true once per session, however many requests (on
	// however many nodes) bring its ticket, and never for a session that
	// was revoked (its end was told by the revocation).
	SessionEnded bool
	// Position is 1 + the live waiters ahead (0 unless waiting).
	Position int64
	// WaitKnown reports whether EstimatedWait means anything.
	WaitKnown bool
	// EstimatedWait is the expected time until admission (the median for
	// random queueing).
	EstimatedWait time.Duration
	// WaitLow and WaitHigh are the 25th and 75th percentiles of the wait
	// for random queueing (zero otherwise).
	WaitLow, WaitHigh time.Duration
	// Settings are the settings in force for the decision: the room's, or
	// its running event's.
	Settings Settings
	// Phase and Event say whether an event's pre-queue or the event itself
	// applies (Event is nil with NoEvent).
	Phase Phase
	Event *Event
	// RefreshAfter is how long the page waits before checking in again.
	RefreshAfter time.Duration
	// Stats are the room's counters as of the decision (zero for admitted
	// visitors served without a store call).
	Stats RoomStats
	// QueueAll reports that the room sends everyone to the queue.
	QueueAll bool
	// Degraded reports a decision made by the fail mode, without the
	// store (which could not be reached).
	Degraded bool
	// Replay reports a ticket the store had already counted on (a copy,
	// a request sent twice, a check-in earlier than the ticket allows):
	// nothing was counted.
	Replay bool
	// Challenge, Difficulty and ChallengeExpires are the proof-of-work
	// challenge of Outcome Challenge. The engine decides the outcome (a
	// new visitor must pay first: Visit.Proof) and leaves them empty; the
	// gate, which holds the keys, fills them in.
	Challenge        string
	Difficulty       int
	ChallengeExpires time.Time
	// OverClient reports a visitor without a ticket whose client is over
	// the room's per-client limit: it waits at the back of the line, or
	// (Outcome Turn) is refused a ticket.
	OverClient bool
}

// Visit is one request of a visitor to a room, as the engine sees it.
type Visit struct {
	// Ticket is the visitor's ticket; nil when it has none or it did not
	// open.
	Ticket *Ticket
	// Now is the time of the request.
	Now time.Time
	// Client is the visitor's address (through trusted proxies), for
	// per-client limits; the zero Addr when unknown.
	Client netip.Addr
	// Invite is what an invite link gives a visitor without a ticket
	// (zero: none).
	Invite InviteMode
	// Proof is what the gate knows of the visitor's proof of work; the
	// zero value asks none (the gate cannot issue challenges).
	Proof Proof
}

// Proof is a visit's proof of work (Visit.Proof). When On, a room whose
// settings in force ask for one (ProofOfWork) asks it of every new
// visitor the decision would make (no ticket, a ticket whose session
// ended, a waiting ticket given up, a ticket that did not open), never of
// a visitor that keeps its ticket: with Always of every one, otherwise of
// one that would not be admitted at once into a free slot, decided in
// the store's atomic step (AdmitOp.Unproven). The decision is then
// Outcome Challenge, and the gate fills in the challenge.
type Proof struct {
	// On reports that the gate can issue challenges.
	On bool
	// Spend spends the solution the request brought (each solution earns
	// one new visitor, once) and reports whether it was good and not
	// spent before; nil when the request brought none. The decision calls
	// it at most once, only when it is about to make a new visitor, and
	// before the store counts that visitor.
	Spend func(ctx context.Context) (ok bool, err error)
}

// InviteMode is what an invite link gives.
type InviteMode uint8

// The invite modes.
const (
	// InviteAdmit admits at once, counted, even past the limits.
	InviteAdmit InviteMode = 1
	// InviteFront gives a place at the front of the line.
	InviteFront InviteMode = 2
)

// String names the mode as the CLI and the API do.
func (m InviteMode) String() string {
	switch m {
	case InviteAdmit:
		return "admit"
	case InviteFront:
		return "front"
	}
	return "none"
}

// FrontPlace is the place in line (an arrival second) of a front invite:
// ahead of every arrival usher can see (2020-01-01 00:00:00 UTC).
const FrontPlace = 1577836800
