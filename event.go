package usher

import "time"

// Event is a scheduled window that overrides some of its room's settings
// while it runs; unset overrides inherit from the room.
type Event struct {
	// Name is shown on the pre-queue page and in the API.
	Name string
	// PrequeueStart, when not zero, opens the pre-queue: from then until
	// Start, arrivals wait and nobody new is admitted.
	PrequeueStart time.Time
	// Start and End bound the event: [Start, End).
	Start, End time.Time
	// ShuffleAtStart orders the pre-queue at random at the start; otherwise
	// pre-queued visitors keep their arrival order. Either way they go in
	// before anyone who arrives after the start.
	ShuffleAtStart bool
	// DrawBeacon, when not empty, is mixed into the shuffle's seed: the
	// value of a public randomness beacon round published after the
	// shuffle's commitment and before the pre-queue opens, so that not
	// even the operator chose the seed (docs/fairness.md). The value of
	// the first pre-queue join is kept and revealed.
	DrawBeacon string
	// Overrides are the settings that differ from the room's during the
	// event.
	Overrides Overrides
}

// WindowStart is when the event's window opens: its pre-queue's start, or
// its start when it has no pre-queue.
func (e *Event) WindowStart() time.Time {
	if e.PrequeueStart.IsZero() {
		return e.Start
	}
	return e.PrequeueStart
}

// Overrides are optional settings; a nil field keeps the room's value.
type Overrides struct {
	TotalActiveUsers        *int
	NewUsersPerMinute       *int
	SessionDuration         *time.Duration
	DisableSessionRenewal   *bool
	QueueingMethod          *QueueingMethod
	QueueAll                *bool
	QueueingStatusCode      *int
	JSONResponseEnabled     *bool
	CustomPageHTML          *string
	DefaultTemplateLanguage *string
	RefreshInterval         *time.Duration
	ClientLimit             *ClientLimit
	ProofOfWork             *ProofOfWork
	Autopilot               *Autopilot
}

// Apply returns s with the overrides set.
func (o *Overrides) Apply(s Settings) Settings {
	set(&s.TotalActiveUsers, o.TotalActiveUsers)
	set(&s.NewUsersPerMinute, o.NewUsersPerMinute)
	set(&s.SessionDuration, o.SessionDuration)
	set(&s.DisableSessionRenewal, o.DisableSessionRenewal)
	set(&s.QueueingMethod, o.QueueingMethod)
	set(&s.QueueAll, o.QueueAll)
	set(&s.QueueingStatusCode, o.QueueingStatusCode)
	set(&s.JSONResponseEnabled, o.JSONResponseEnabled)
	set(&s.CustomPageHTML, o.CustomPageHTML)
	set(&s.DefaultTemplateLanguage, o.DefaultTemplateLanguage)
	set(&s.RefreshInterval, o.RefreshInterval)
	set(&s.ClientLimit, o.ClientLimit)
	set(&s.ProofOfWork, o.ProofOfWork)
	set(&s.Autopilot, o.Autopilot)
	return s
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Phase is where a room stands in its schedule at a moment.
type Phase uint8

// The phases.
const (
	// NoEvent: the room's own settings apply.
	NoEvent Phase = iota
	// Prequeue: an event's pre-queue is open; nobody new is admitted.
	Prequeue
	// Running: an event runs; its overrides apply.
	Running
)

// String names the phase.
func (p Phase) String() string {
	switch p {
	case Prequeue:
		return "prequeue"
	case Running:
		return "event"
	}
	return "none"
}

// Schedule is a room's settings at a moment: the room's own, or an event's
// overrides over them.
type Schedule struct {
	Settings
	// Event is the event in pre-queue or running (nil: none).
	Event *Event
	Phase Phase
}

// At returns the room's settings at now. Events must not overlap (the
// config rejects overlapping events), so at most one applies: the
// pre-queue phase covers [PrequeueStart, Start) and uses the event's
// settings, so the page and limits are the event's from the moment the
// pre-queue opens; the event covers [Start, End).
func (r *Room) At(now time.Time) Schedule {
	for i := range r.Events {
		e := &r.Events[i]
		switch {
		case !now.Before(e.Start) && now.Before(e.End):
			return Schedule{Settings: e.Overrides.Apply(r.Settings), Event: e, Phase: Running}
		case !e.PrequeueStart.IsZero() && !now.Before(e.PrequeueStart) && now.Before(e.Start):
			return Schedule{Settings: e.Overrides.Apply(r.Settings), Event: e, Phase: Prequeue}
		}
	}
	return Schedule{Settings: r.Settings}
}
