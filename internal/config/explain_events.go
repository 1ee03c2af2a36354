package config

import (
	"cmp"
	"fmt"
	"time"

	"github.com/usherhq/usher"
)

// explainEvent returns the sentence that describes one event of a room:
// its pre-queue, its window and the settings it overrides. Times are in
// UTC; a time on the same day as the one before it is written without the
// date.
func (c *Config) explainEvent(rm *usher.Room, e *usher.Event) string {
	var clock eventClock
	with := overrideClauses(c, rm, &e.Overrides)
	if e.PrequeueStart.IsZero() {
		return fmt.Sprintf("From %s %q runs until %s with %s.", clock.at(e.Start), e.Name, clock.at(e.End), with)
	}
	order := "shuffled at"
	if !e.ShuffleAtStart {
		order = "let in by order of arrival from"
	}
	return fmt.Sprintf("From %s visitors wait in a pre-queue for %q, %s %s; %q runs until %s with %s.",
		clock.at(e.PrequeueStart), e.Name, order, clock.at(e.Start), e.Name, clock.at(e.End), with)
}

// eventClock writes the times of one sentence, in UTC: the first with its
// date and zone, "2026-12-01 09:40 UTC", later ones on the same day as the
// one before as "10:00".
type eventClock struct {
	last time.Time
}

func (k *eventClock) at(t time.Time) string {
	t = t.UTC()
	layout := "15:04"
	if t.Second() != 0 || t.Nanosecond() != 0 {
		layout = "15:04:05"
	}
	first := k.last.IsZero()
	sameDay := !first && t.Format(time.DateOnly) == k.last.Format(time.DateOnly)
	k.last = t
	switch {
	case first:
		return t.Format(time.DateOnly+" "+layout) + " UTC"
	case sameDay:
		return t.Format(layout)
	}
	return t.Format(time.DateOnly + " " + layout)
}

// overrideClauses describes what an event changes: the limits in force
// (when it overrides either), then each other override; "the room's own
// settings" when it overrides none.
func overrideClauses(c *Config, rm *usher.Room, o *usher.Overrides) string {
	s := o.Apply(rm.Settings)
	var out []string
	if o.TotalActiveUsers != nil || o.NewUsersPerMinute != nil {
		out = append(out, fmt.Sprintf("up to %s and %s a minute",
			plural(s.TotalActiveUsers, "active visitor"), plural(s.NewUsersPerMinute, "new visitor")))
	}
	if o.SessionDuration != nil || o.DisableSessionRenewal != nil {
		from := "after the visitor's last request"
		if s.DisableSessionRenewal {
			from = "from admission"
		}
		out = append(out, fmt.Sprintf("sessions of %s %s", formatDuration(s.SessionDuration), from))
	}
	if o.QueueingMethod != nil {
		switch s.QueueingMethod {
		case usher.Random:
			out = append(out, "a lottery among live waiters")
		case usher.Passthrough:
			out = append(out, "everyone let in at once (passthrough)")
		case usher.Reject:
			out = append(out, "visitors beyond the limits turned away (reject)")
		default:
			out = append(out, "waiters let in first in, first out")
		}
	}
	if o.QueueAll != nil {
		if s.QueueAll {
			out = append(out, "queue_all on, so nobody new is let in")
		} else {
			out = append(out, "queue_all off")
		}
	}
	if o.RefreshInterval != nil {
		out = append(out, "check-ins every "+formatDuration(s.RefreshInterval))
	}
	if o.QueueingStatusCode != nil {
		out = append(out, fmt.Sprintf("the waiting page answering with status %d", s.QueueingStatusCode))
	}
	if o.CustomPageHTML != nil {
		out = append(out, "the page template "+c.pageName(s.CustomPageHTML))
	}
	if o.DefaultTemplateLanguage != nil {
		out = append(out, "pages defaulting to "+s.DefaultTemplateLanguage)
	}
	if o.JSONResponseEnabled != nil {
		if s.JSONResponseEnabled {
			out = append(out, "JSON answers on")
		} else {
			out = append(out, "JSON answers off")
		}
	}
	if o.ClientLimit != nil {
		c := &s.ClientLimit
		over := "more wait at the back"
		if c.Rejects() {
			over = "more are refused with 429"
		}
		out = append(out, fmt.Sprintf("%s a minute per client (IPv4 /%d, IPv6 /%d) and %d per network (IPv4 /%d, IPv6 /%d; %s)",
			plural(c.NewVisitorsPerMinute, "new place"), c.IPv4Prefix, c.IPv6Prefix,
			c.NetworkPerMinute(), cmp.Or(c.NetworkIPv4Prefix, 24), cmp.Or(c.NetworkIPv6Prefix, 48), over))
	}
	if o.ProofOfWork != nil {
		out = append(out, fmt.Sprintf("a proof of work of %d bits", s.ProofOfWork.Difficulty))
	}
	if o.Autopilot != nil {
		out = append(out, autopilotClause(&s))
	}
	if len(out) == 0 {
		return "the room's own settings"
	}
	return joinAnd(out)
}
