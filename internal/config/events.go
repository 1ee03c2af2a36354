package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/usherhq/usher"
)

// checkEvents checks a room's events: each event's times and overrides,
// then that no two events' windows overlap. A window runs from the
// pre-queue's start (or the event's start) to the event's end.
func checkEvents(r *report, rm *usher.Room, at loc) {
	valid := make([]bool, len(rm.Events))
	for j := range rm.Events {
		e := &rm.Events[j]
		eat := eventLoc(at, j, e.Name)
		valid[j] = checkEvent(r, e, eat)
		checkOverrides(r, &e.Overrides, eat)
		if m := e.Overrides.QueueingMethod; m != nil && *m == usher.Random && rm.Settings.Shards > 1 {
			r.add(0, eat.field("queueing_method"), "random draws from the room's whole line, which the room's shards (%d) spread over Redis shards: a room spread over shards stays fifo (set the room's shards to 1 to draw)", rm.Settings.Shards)
		}
		if e.Overrides.Autopilot != nil {
			s := e.Overrides.Apply(rm.Settings)
			checkAutopilot(r, &s.Autopilot, &s, eat.field("autopilot"))
		}
	}
	if len(rm.Events) > maxPerRoom {
		return
	}
	for j := range rm.Events {
		for i := range j {
			a, b := &rm.Events[i], &rm.Events[j]
			if !valid[i] || !valid[j] || !windowStart(a).Before(b.End) || !windowStart(b).Before(a.End) {
				continue
			}
			r.add(0, eventLoc(at, j, b.Name), "its window, %s, overlaps the window of %s, %s: a room's events must not overlap (a pre-queue is part of its event's window)",
				windowText(b), eventRef(i, a.Name), windowText(a))
		}
	}
}

// checkEvent checks an event's name and times, and reports whether its
// window is known (start and end set, start before end), so that overlaps
// can be checked.
func checkEvent(r *report, e *usher.Event, at loc) bool {
	if strings.TrimSpace(e.Name) == "" {
		r.add(0, at.field("name"), "required")
	}
	checkText(r, at.field("name"), e.Name)
	const want = "required, an RFC 3339 time like \"2026-12-01T10:00:00Z\""
	if e.Start.IsZero() {
		r.add(0, at.field("event_start_time"), want)
	}
	if e.End.IsZero() {
		r.add(0, at.field("event_end_time"), want)
	}
	if e.Start.IsZero() || e.End.IsZero() {
		return false
	}
	ok := true
	if !e.Start.Before(e.End) {
		ok = false
		r.add(0, at.field("event_end_time"), "must be after event_start_time (%s), got %s", formatTime(e.Start), formatTime(e.End))
	}
	if !e.PrequeueStart.IsZero() && !e.PrequeueStart.Before(e.Start) {
		ok = false
		r.add(0, at.field("prequeue_start_time"), "must be before event_start_time (%s), got %s", formatTime(e.Start), formatTime(e.PrequeueStart))
	}
	if e.ShuffleAtStart && e.PrequeueStart.IsZero() {
		r.add(0, at.field("shuffle_at_event_start"), "needs prequeue_start_time: without a pre-queue nobody is waiting to be shuffled at the start")
	}
	if e.DrawBeacon != "" && !e.ShuffleAtStart {
		r.add(0, at.field("draw_beacon"), "needs shuffle_at_event_start: the beacon seeds the pre-queue's shuffle, and there is none")
	}
	if len(e.DrawBeacon) > 1024 {
		r.add(0, at.field("draw_beacon"), "must be at most 1024 bytes (a beacon round's value), got %d", len(e.DrawBeacon))
	}
	return ok
}

// checkOverrides checks the settings an event overrides, by the rules of a
// room's settings. An override is set on purpose, so zero is not taken as
// "required" but reported as the value it is.
func checkOverrides(r *report, o *usher.Overrides, at loc) {
	if v := o.TotalActiveUsers; v != nil {
		check(r, at.field("total_active_users"), checkAtLeast(*v, 1))
	}
	if v := o.NewUsersPerMinute; v != nil {
		check(r, at.field("new_users_per_minute"), checkAtLeast(*v, 1))
	}
	if v := o.SessionDuration; v != nil {
		check(r, at.field("session_duration"), checkSessionDuration(*v))
	}
	if v := o.RefreshInterval; v != nil {
		check(r, at.field("refresh_interval"), checkRefreshInterval(*v))
	}
	if v := o.QueueingMethod; v != nil {
		check(r, at.field("queueing_method"), checkQueueingMethod(*v))
	}
	if v := o.QueueingStatusCode; v != nil {
		check(r, at.field("queueing_status_code"), checkStatusCode(*v))
	}
	if v := o.DefaultTemplateLanguage; v != nil {
		check(r, at.field("default_template_language"), checkLanguage(*v))
	}
	if v := o.CustomPageHTML; v != nil && strings.TrimSpace(*v) == "" {
		r.add(0, at.field("custom_page_html"), "%s", emptyPageMessage)
	}
	if v := o.ClientLimit; v != nil {
		checkClientLimit(r, v, at.field("client_limit"))
	}
	if v := o.ProofOfWork; v != nil {
		checkProofOfWork(r, v, at.field("proof_of_work"))
	}
}

// eventLoc returns the place of a room's j-th event.
func eventLoc(room loc, j int, name string) loc {
	at := room.field("events").index(j)
	at.event = name
	return at
}

// eventRef names the i-th event for a message: "events[0] (drop)".
func eventRef(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("events[%d]", i)
	}
	return fmt.Sprintf("events[%d] (%s)", i, name)
}

// windowStart is when an event's window opens: its pre-queue's start, or
// its start.
func windowStart(e *usher.Event) time.Time {
	if e.PrequeueStart.IsZero() {
		return e.Start
	}
	return e.PrequeueStart
}

// windowText describes an event's window: "2026-12-01T09:40:00Z to
// 2026-12-01T11:00:00Z".
func windowText(e *usher.Event) string {
	return formatTime(windowStart(e)) + " to " + formatTime(e.End)
}

// formatTime writes t in RFC 3339, as it was written (with its offset).
func formatTime(t time.Time) string {
	return t.Format(time.RFC3339Nano)
}
