package notify

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
	"strings"
	"time"
)

// Event is one thing that happened, as webhooks and the stream send it:
// {"id","type","room","time","data"}.
type Event struct {
	// ID is unique per event (Publish sets it when empty); a webhook sends
	// it again as Usher-Delivery on every retry, so receivers can drop
	// duplicates.
	ID string `json:"id"`
	// Type is one of Types.
	Type string `json:"type"`
	// Room is the room the event is about; empty for events about the
	// node (breaker.opened, breaker.closed), which go to every room's
	// webhooks that want them.
	Room string `json:"room,omitempty"`
	// Time is when it happened (Publish sets it when zero).
	Time time.Time `json:"time"`
	// Data is the event's own fields (see docs/webhooks.md).
	Data any `json:"data"`
}

// The event types.
const (
	QueueingStarted     = "queueing.started"
	QueueingStopped     = "queueing.stopped"
	SettingsChanged     = "room.settings_changed"
	EventPrequeueOpened = "event.prequeue_started"
	EventStarted        = "event.started"
	EventEnded          = "event.ended"
	BreakerOpened       = "breaker.opened"
	BreakerClosed       = "breaker.closed"
	SummaryMinute       = "summary.minute"
	AutopilotChanged    = "autopilot.changed"
	DrawCommitted       = "draw.committed"
	DrawRevealed        = "draw.revealed"
	VisitorTicketIssued = "visitor.ticket_issued"
	VisitorAdmitted     = "visitor.admitted"
	VisitorSessionEnded = "visitor.session_ended"
	VisitorRevoked      = "visitor.revoked"
)

// Types are the event types, room events first, then the per-visitor
// ones (opt-in and sampled).
var types = []string{
	QueueingStarted, QueueingStopped, SettingsChanged,
	EventPrequeueOpened, EventStarted, EventEnded,
	BreakerOpened, BreakerClosed, SummaryMinute, AutopilotChanged,
	DrawCommitted, DrawRevealed,
	VisitorTicketIssued, VisitorAdmitted, VisitorSessionEnded, VisitorRevoked,
}

// Types returns every event type, room events first, then the
// per-visitor ones.
func Types() []string { return slices.Clone(types) }

// KnownType reports whether t is an event type.
func KnownType(t string) bool { return slices.Contains(types, t) }

// VisitorType reports whether t is a per-visitor event type: opt-in and
// sampled.
func VisitorType(t string) bool { return strings.HasPrefix(t, "visitor.") }

// newID returns a random event id: 24 hex digits.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// MatchType reports whether pattern names type t: the type itself, or a
// family written "queueing.*" (every type starting "queueing."), or "*"
// for every type.
func MatchType(pattern, t string) bool {
	if pattern == "*" {
		return true
	}
	if fam, ok := strings.CutSuffix(pattern, ".*"); ok {
		return strings.HasPrefix(t, fam+".")
	}
	return pattern == t
}

// ValidPattern reports whether pattern names at least one type (see
// MatchType).
func ValidPattern(pattern string) bool {
	return slices.ContainsFunc(types, func(t string) bool { return MatchType(pattern, t) })
}

// matchAny reports whether t is wanted by patterns: named by one of them,
// or, with no patterns, any room event (visitor events must be named).
func matchAny(patterns []string, t string) bool {
	if len(patterns) == 0 {
		return !VisitorType(t)
	}
	for _, p := range patterns {
		if MatchType(p, t) && (p != "*" || !VisitorType(t)) {
			return true
		}
	}
	return false
}

// Publisher publishes events without blocking; *Bus is one. A component
// that only reports (the origin-health governor, say) takes a Publisher:
// it calls Publish(Event{Type: ..., Room: ..., Data: ...}) and never
// waits for a receiver. Its types must be added to the list above first,
// so that configs may name them.
type Publisher interface {
	Publish(Event)
}

var _ Publisher = (*Bus)(nil)
