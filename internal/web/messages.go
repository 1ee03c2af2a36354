package web

import (
	"strconv"
	"strings"
)

// Plural is a message with a count, "{n}" standing for the number: One for
// the counts a language treats as singular, Other for the rest. Languages
// without plural forms (Japanese, Chinese) give the same text twice.
type Plural struct {
	One, Other string
}

// Messages are the texts of the default pages in one language. Plain texts
// are used as they are; "{n}", "{room}", "{event}", "{time}", "{wait}",
// "{low}", "{high}", "{h}" and "{m}" are filled in by PageData's methods.
// The catalogue is shared: a Messages must not be modified.
type Messages struct {
	// Busy is the title of a waiting page with no place to show.
	Busy string
	// PleaseWait is the title while the room lets nobody in.
	PleaseWait string
	// TitlePosition is the title of a first-come waiting page ({n}).
	TitlePosition string
	// InRoom is the heading when no position is shown.
	InRoom string
	// Next is the heading of the visitor at the front.
	Next string
	// NobodyAhead follows Next.
	NobodyAhead string
	// Position is the heading with the visitor's place ({n}).
	Position string
	// Ahead counts the people ahead ({n}).
	Ahead Plural
	// Waiting counts the people waiting, random method ({n}).
	Waiting Plural
	// SameChance explains the random method.
	SameChance string
	// QueueAll explains a room that lets nobody in for now.
	QueueAll string
	// PlaceKept reassures: the place is kept, the page refreshes itself.
	PlaceKept string
	// KeepOpen asks the visitor to keep the page open.
	KeepOpen string
	// ProgressLabel is the progress bar's accessible name.
	ProgressLabel string
	// EstimatedWait labels the wait.
	EstimatedWait string
	// LastUpdated labels the time of the decision.
	LastUpdated string
	// WaitAbout is a known wait ({wait}: a duration).
	WaitAbout string
	// WaitRange is a wait between two bounds ({low}, {high}).
	WaitRange string
	// WaitUnknown is said while the wait is not known.
	WaitUnknown string
	// LessThanMinute is a wait under one minute.
	LessThanMinute string
	// Minutes and Hours are durations ({n}).
	Minutes, Hours Plural
	// HoursMinutes joins hours and minutes ({h}, {m}).
	HoursMinutes string
	// CheckEvery says how often the page checks in ({n} seconds), without
	// JavaScript.
	CheckEvery Plural
	// CheckingIn is the script's countdown to the next check ({n} seconds).
	CheckingIn Plural
	// CheckingNow is shown when the countdown reaches zero.
	CheckingNow string
	// Footer is the pages' footer.
	Footer string

	// LiveStatus is what the script tells screen readers when a check-in
	// changed the place or the wait ({place}: the heading, "You are number
	// 3 in line"; {wait}: the estimated wait).
	LiveStatus string
	// GoingIn is shown when a check-in lets the visitor in, while the page
	// loads the site.
	GoingIn string
	// NotifyAsk is the button that asks the browser for a notification
	// (shown by the script, where the browser can notify).
	NotifyAsk string
	// NotifyOn confirms that a notification will come.
	NotifyOn string
	// NotifyOff says that notifications are off again (the button pressed
	// a second time).
	NotifyOff string
	// NotifyBlocked says that the browser refuses notifications.
	NotifyBlocked string
	// NotifyNear is the title of the notification when the visitor is near
	// the front.
	NotifyNear string
	// NotifyTurn is the title of the notification when the visitor goes
	// in.
	NotifyTurn string

	// Closed is the reject page's title.
	Closed string
	// RejectHeading is the reject page's heading.
	RejectHeading string
	// RejectLead says the room takes nobody ({room}).
	RejectLead string
	// ComeBack asks the visitor to come back later.
	ComeBack string

	// StartsSoon is the pre-queue page's title.
	StartsSoon string
	// PrequeueHeading is the pre-queue page's heading.
	PrequeueHeading string
	// StartsAt says when the event starts ({time}).
	StartsAt string
	// EventStartsAt says when a named event starts ({event}, {time}).
	EventStartsAt string
	// PrequeueLead explains the pre-queue.
	PrequeueLead string
	// Start labels the start time.
	Start string
	// StartsIn labels the time left before the start.
	StartsIn string
	// StartingNow replaces the time left once it is over.
	StartingNow string
	// YourTime shows the start in the visitor's time zone ({time}); only
	// the script fills it in.
	YourTime string

	// ChallengeTitle is the challenge page's title.
	ChallengeTitle string
	// ChallengeHeading is the challenge page's heading.
	ChallengeHeading string
	// ChallengeLead explains the short calculation before joining.
	ChallengeLead string
	// ChallengeWorking is said while the browser works (aria-live).
	ChallengeWorking string
	// ChallengeDone is said when the work is done, before the reload.
	ChallengeDone string
	// ChallengeFailed is said when the browser cannot do the work.
	ChallengeFailed string
	// ChallengeNoScript is all a browser without JavaScript is shown.
	ChallengeNoScript string
	// ChallengeProgress is the challenge progress bar's accessible name.
	ChallengeProgress string

	tag      string             // BCP 47, as Languages lists it
	one      func(n int64) bool // plural rule: whether n takes the One form
	group    string             // thousands separator
	minGroup int                // digits needed before grouping starts: 4 groups 1234, 5 only 12345
	noSpace  bool               // sentences follow each other without a space (Japanese, Chinese)
}

// Count returns the form of p for n, with n written in the language.
func (m *Messages) Count(p Plural, n int64) string {
	s := p.Other
	if m.one != nil && m.one(n) {
		s = p.One
	}
	return strings.ReplaceAll(s, "{n}", m.Number(n))
}

// Number writes n with the language's thousands separator.
func (m *Messages) Number(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if m.group == "" || len(s) < max(m.minGroup, 4) {
		if neg {
			return "-" + s
		}
		return s
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	first := len(s) % 3
	if first == 0 {
		first = 3
	}
	b.WriteString(s[:first])
	for i := first; i < len(s); i += 3 {
		b.WriteString(m.group)
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// Duration writes n whole minutes: "less than a minute", "3 minutes",
// "1 hour 5 minutes".
func (m *Messages) Duration(n int64) string {
	if n <= 0 {
		return m.LessThanMinute
	}
	h, min := n/60, n%60
	switch {
	case h == 0:
		return m.Count(m.Minutes, min)
	case min == 0:
		return m.Count(m.Hours, h)
	}
	return fill(m.HoursMinutes, "{h}", m.Count(m.Hours, h), "{m}", m.Count(m.Minutes, min))
}

// Range writes a wait between low and high whole minutes: "between 5 and
// 15 minutes", "between 45 minutes and 2 hours". Equal bounds read "about";
// high at or below zero is "less than a minute".
func (m *Messages) Range(low, high int64) string {
	low = max(low, 0)
	switch {
	case high <= 0:
		return m.LessThanMinute
	case low >= high:
		return fill(m.WaitAbout, "{wait}", m.Duration(high))
	}
	lo := m.Number(low) // "between 5 and 15 minutes"
	switch {
	case high >= 60 && low == 0:
		lo = m.Count(m.Minutes, 0)
	case high >= 60:
		lo = m.Duration(low) // "between 45 minutes and 2 hours"
	}
	return fill(m.WaitRange, "{low}", lo, "{high}", m.Duration(high))
}

// fill replaces each placeholder with its value (pairs of arguments), as
// strings.NewReplacer(pairs...).Replace(s) does for non-empty placeholders
// (leftmost first, the first pair that matches there, replaced text not
// scanned again), without building a Replacer each time: it runs on every
// waiting answer.
func fill(s string, pairs ...string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		matched := false
		for k := 0; k+1 < len(pairs); k += 2 {
			if old := pairs[k]; old != "" && strings.HasPrefix(s[i:], old) {
				if b.Cap() == 0 {
					b.Grow(len(s) + 16)
				}
				b.WriteString(s[last:i])
				b.WriteString(pairs[k+1])
				i += len(old)
				last, matched = i, true
				break
			}
		}
		if !matched {
			i++
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// pluralOne is the rule of English, German, Dutch, Italian and Spanish:
// singular for 1 only.
func pluralOne(n int64) bool { return n == 1 }

// pluralZeroOne is the rule of French and Brazilian Portuguese: singular
// for 0 and 1 (CLDR "i = 0,1"). The CLDR "many" form of round millions is
// not used.
func pluralZeroOne(n int64) bool { return n == 0 || n == 1 }
