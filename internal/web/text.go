package web

import (
	"math"
	"strings"
	"time"
)

// The texts of the default pages that take a value, in the page's language
// (see Messages for the plain ones, under .Msg).

// Num writes n as the page's language writes numbers ("1,234", "1.234").
func (d PageData) Num(n int64) string { return d.Msg().Number(n) }

// Sentences joins sentences as the page's language does: with a space, or
// none in Japanese and Chinese. Empty ones are left out.
func (d PageData) Sentences(s ...string) string {
	sep := " "
	if d.Msg().noSpace {
		sep = ""
	}
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return strings.Join(out, sep)
}

// TitlePosition is the waiting page's title for a first-come place:
// "Number 12 in line".
func (d PageData) TitlePosition() string {
	return fill(d.Msg().TitlePosition, "{n}", d.Num(d.Position))
}

// PositionText is the heading with the visitor's place: "You are number 12
// in line".
func (d PageData) PositionText() string {
	return fill(d.Msg().Position, "{n}", d.Num(d.Position))
}

// AheadText counts the people ahead: "11 people are ahead of you."
func (d PageData) AheadText() string { return d.Msg().Count(d.Msg().Ahead, d.PeopleAhead) }

// WaitingText counts the people waiting: "250 people are waiting."
func (d PageData) WaitingText() string { return d.Msg().Count(d.Msg().Waiting, d.Waiting) }

// CheckEveryText says how often the page checks in, for browsers without
// JavaScript: "This page checks again every 20 seconds by itself."
func (d PageData) CheckEveryText() string {
	return d.Msg().Count(d.Msg().CheckEvery, int64(d.RefreshSeconds))
}

// RejectLead is the reject page's lead: "Spring Sale is not accepting new
// visitors at the moment." (The room name is escaped by the template.)
func (d PageData) RejectLead() string { return fill(d.Msg().RejectLead, "{room}", d.RoomName) }

// EventStartISO is EventStart in RFC 3339, UTC; empty without an event.
func (d PageData) EventStartISO() string {
	if d.EventStart.IsZero() {
		return ""
	}
	return d.EventStart.UTC().Format(time.RFC3339)
}

// EventStartUTC is EventStart as "2026-03-14 16:00 UTC"; the page's script
// adds the visitor's own time.
func (d PageData) EventStartUTC() string {
	if d.EventStart.IsZero() {
		return ""
	}
	return d.EventStart.UTC().Format("2006-01-02 15:04 UTC")
}

// StartsAtText says when the event starts: "Spring Sale starts at
// 2026-03-14 16:00 UTC.", or "The event starts at ..." without EventName.
func (d PageData) StartsAtText() string {
	m := d.Msg()
	if d.EventName == "" {
		return fill(m.StartsAt, "{time}", d.EventStartUTC())
	}
	return fill(m.EventStartsAt, "{event}", d.EventName, "{time}", d.EventStartUTC())
}

// UntilStart is the time from LastUpdated to EventStart, never below zero.
func (d PageData) UntilStart() time.Duration {
	if d.EventStart.IsZero() || !d.EventStart.After(d.LastUpdated) {
		return 0
	}
	return d.EventStart.Sub(d.LastUpdated)
}

// UntilStartSeconds is UntilStart in whole seconds, rounded up: where the
// script's countdown starts.
func (d PageData) UntilStartSeconds() int64 {
	return int64(math.Ceil(d.UntilStart().Seconds()))
}

// UntilStartMinutes is UntilStart in whole minutes, rounded up.
func (d PageData) UntilStartMinutes() int64 { return Minutes(d.UntilStart()) }

// UntilStartText is the time left before the event in words, "2 hours 5
// minutes", or "Starting now" once it is over.
func (d PageData) UntilStartText() string {
	if d.UntilStart() <= 0 {
		return d.Msg().StartingNow
	}
	return d.Msg().Duration(d.UntilStartMinutes())
}
