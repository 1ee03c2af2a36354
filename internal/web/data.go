package web

import (
	"math"
	"time"

	"github.com/usherhq/usher"
)

// DefaultRefresh is the check-in interval used when neither the decision nor
// the room gives one.
const DefaultRefresh = 20 * time.Second

// PageData is what the page templates see; custom templates get the same
// data as mustache variables (Vars).
type PageData struct {
	// Lang is the page's language, one of Languages (see Language); en-US
	// when empty or unknown. It picks the texts and goes in <html lang>.
	Lang string
	// RoomID is the room's id.
	RoomID string
	// RoomName is shown to the visitor (the room's Name, else its ID).
	RoomName string
	// Position is the visitor's place in line, 1 being next; 0 when not
	// waiting. With the random method it only counts earlier arrivals and
	// the page shows Waiting instead.
	Position int64
	// PeopleAhead is Position - 1, never below zero.
	PeopleAhead int64
	// Waiting is the number of live waiters in the room.
	Waiting int64
	// AdmittedLastMinute is the number of visitors let in during the last
	// 60 seconds.
	AdmittedLastMinute int64
	// WaitKnown reports whether WaitMinutes (and WaitLow, WaitHigh) mean
	// anything.
	WaitKnown bool
	// WaitMinutes is the estimated wait rounded up to whole minutes (0 when
	// unknown, or less than a minute).
	WaitMinutes int64
	// WaitSeconds is the same wait in whole seconds, rounded up (0 when
	// unknown): waitTimeSeconds in JSON, and what the page's script
	// counts down between check-ins.
	WaitSeconds int64
	// WaitLow and WaitHigh are, for the random method, the 25th and 75th
	// percentiles of the wait in whole minutes (see Minutes); the page says
	// "between WaitLow and WaitHigh minutes" when WaitHigh > 0 and the wait
	// is known. Zero: no range, the page says "about WaitMinutes".
	WaitLow, WaitHigh int64
	// WaitLowSeconds and WaitHighSeconds are the same percentiles in whole
	// seconds, rounded up (waitTimeLowSeconds and waitTimeHighSeconds in
	// JSON); zero with no range.
	WaitLowSeconds, WaitHighSeconds int64
	// RefreshSeconds is when the page checks in again, in whole seconds
	// (rounded up, at least 1): the meta refresh and the countdown.
	RefreshSeconds int
	// LastUpdated is the time of the decision the page shows; the
	// pre-queue countdown runs from it.
	LastUpdated time.Time
	// QueueingMethod is fifo, random, passthrough or reject.
	QueueingMethod string
	// QueueAll reports that the room lets nobody in for now.
	QueueAll bool
	// Prequeue reports that the visitor waits for an event that has not
	// started (PagePrequeue; isEventPrequeueing in custom templates).
	Prequeue bool
	// EventName names the event, if any ("" on the pages: "The event").
	EventName string
	// EventStart is when the event starts (zero: no event).
	EventStart time.Time
	// Progress, between 0 and 1, is how close the visitor is to the
	// front, measured in time: Nearness of the estimated wait, 1 / (1 + w)
	// with w the wait in minutes (1/2 with a minute to go, 1/11 with ten).
	// It rises as the wait shortens, needs no memory of the visitor's
	// first place, and is 0 while the wait is not known (nobody is let in).
	// The page's script computes the same from each check-in's
	// waitTimeSeconds, so the bar does not jump when it takes over.
	Progress float64
	// JSONEnabled reports that the room answers JSON
	// (json_response_enabled): the page's script then checks in with it
	// and updates the page in place instead of reloading it.
	JSONEnabled bool

	// Challenge is the proof-of-work challenge the challenge page
	// (PageChallenge) solves before the visitor joins the line (see
	// internal/guard); empty on the other pages.
	Challenge string
	// Difficulty is the challenge's difficulty in leading zero bits.
	Difficulty int
	// ChallengeCookie names the cookie the challenge page sets with the
	// solution, challenge.n ("": DefaultChallengeCookie).
	ChallengeCookie string
}

// DefaultChallengeCookie is the cookie of a proof-of-work solution, the
// name internal/guard reads (guard.Cookie).
const DefaultChallengeCookie = "__usher_pow"

// ChallengeCookieName is ChallengeCookie, or DefaultChallengeCookie.
func (d PageData) ChallengeCookieName() string {
	if d.ChallengeCookie == "" {
		return DefaultChallengeCookie
	}
	return d.ChallengeCookie
}

// NewPageData returns the page data for decision d of room, made at now,
// in the room's default language; the gate sets Lang from the visitor's
// Accept-Language (Language), and the event and random-range fields when
// it has them.
func NewPageData(room *usher.Room, d usher.Decision, now time.Time) PageData {
	// The settings in force: a running event's, else the room's.
	set := d.Settings
	if set.RefreshInterval == 0 && set.TotalActiveUsers == 0 {
		set = room.Settings
	}
	method := string(set.QueueingMethod)
	if method == "" {
		method = string(usher.FIFO)
	}
	name := room.Name
	if name == "" {
		name = room.ID
	}
	pd := PageData{
		Lang:               Language("", set.DefaultTemplateLanguage),
		RoomID:             room.ID,
		RoomName:           name,
		Position:           d.Position,
		PeopleAhead:        max(d.Position-1, 0),
		Waiting:            d.Stats.Waiting,
		AdmittedLastMinute: d.Stats.AdmittedLastMinute,
		WaitKnown:          d.WaitKnown,
		RefreshSeconds:     RefreshSeconds(d.RefreshAfter, set.RefreshInterval),
		LastUpdated:        now.UTC(),
		QueueingMethod:     method,
		QueueAll:           d.QueueAll,
		JSONEnabled:        set.JSONResponseEnabled,
	}
	if d.WaitKnown {
		pd.WaitMinutes = Minutes(d.EstimatedWait)
		pd.WaitSeconds = Seconds(d.EstimatedWait)
		if d.WaitHigh > 0 {
			pd.WaitLow, pd.WaitHigh = Minutes(d.WaitLow), Minutes(d.WaitHigh)
			pd.WaitLowSeconds, pd.WaitHighSeconds = Seconds(d.WaitLow), Seconds(d.WaitHigh)
		}
	}
	if d.Phase == usher.Prequeue && d.Event != nil {
		pd.Prequeue = true
		pd.EventName = d.Event.Name
		pd.EventStart = d.Event.Start
	}
	if d.WaitKnown {
		pd.Progress = Nearness(pd.WaitSeconds)
	}
	return pd
}

// RefreshSeconds returns after in whole seconds, rounded up; fallback when
// after is not positive, DefaultRefresh when neither is; at least 1.
func RefreshSeconds(after, fallback time.Duration) int {
	if after <= 0 {
		after = fallback
	}
	if after <= 0 {
		after = DefaultRefresh
	}
	return max(int(math.Ceil(after.Seconds())), 1)
}

// Minutes returns d in whole minutes, rounded up; 0 when d is not
// positive.
func Minutes(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Minutes()))
}

// Seconds returns d in whole seconds, rounded up; 0 when d is not
// positive.
func Seconds(d time.Duration) int64 {
	return int64(math.Ceil(max(d, 0).Seconds()))
}

// FormatMinutes writes a wait of n whole minutes in English words: "less
// than a minute", "1 minute", "1 hour 5 minutes".
func FormatMinutes(n int64) string { return catalog[0].Duration(n) }

// IsFIFO reports whether the room lets waiters in by order of arrival.
func (d PageData) IsFIFO() bool { return d.QueueingMethod == string(usher.FIFO) }

// IsRandom reports whether the room lets waiters in by lottery.
func (d PageData) IsRandom() bool { return d.QueueingMethod == string(usher.Random) }

// Msg returns the texts of the page's language (read only).
func (d PageData) Msg() *Messages { return messagesFor(d.Lang) }

// HasRange reports whether the page shows a wait range: a known wait of
// the random method with WaitHigh > 0.
func (d PageData) HasRange() bool { return d.WaitKnown && d.IsRandom() && d.WaitHigh > 0 }

// WaitFormatted is the known wait in words, in the page's language: "3
// minutes", "less than a minute", "between 5 and 15 minutes" (HasRange);
// empty when the wait is not known. It is waitTimeFormatted in custom
// templates and JSON.
func (d PageData) WaitFormatted() string {
	m := d.Msg()
	switch {
	case !d.WaitKnown:
		return ""
	case d.HasRange():
		return m.Range(d.WaitLow, d.WaitHigh)
	}
	return m.Duration(d.WaitMinutes)
}

// WaitText is the estimated wait as the page says it: "about 3 minutes",
// "less than a minute", "between 5 and 15 minutes", or "We are working out
// your wait".
func (d PageData) WaitText() string {
	m := d.Msg()
	switch {
	case !d.WaitKnown:
		return m.WaitUnknown
	case d.HasRange():
		return m.Range(d.WaitLow, d.WaitHigh)
	case d.WaitMinutes <= 0:
		return m.LessThanMinute
	}
	return fill(m.WaitAbout, "{wait}", m.Duration(d.WaitMinutes))
}

// ProgressPercent is Progress as a whole percentage, 0 to 100.
func (d PageData) ProgressPercent() int { return progressPercent(d.Progress) }

// LastUpdatedISO is LastUpdated in RFC 3339, UTC.
func (d PageData) LastUpdatedISO() string { return d.LastUpdated.UTC().Format(time.RFC3339) }

// LastUpdatedClock is LastUpdated as a UTC time of day ("14:03:07 UTC"); the
// page's script shows it in the visitor's own time zone.
func (d PageData) LastUpdatedClock() string { return d.LastUpdated.UTC().Format("15:04:05 UTC") }
