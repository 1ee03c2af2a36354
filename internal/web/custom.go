package web

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cbroglie/mustache"
)

// Template is an operator's waiting page (custom_page_html): a mustache
// template, as Cloudflare's waiting rooms take, rendered with Vars. It
// serves the waiting and the pre-queue states (isEventPrequeueing tells
// them apart). {{name}} is HTML-escaped; {{{name}}} and {{&name}} are
// not, which is what usherRefreshMeta is for. Partials are not supported.
// A Template is safe for concurrent use.
type Template struct {
	t *mustache.Template
}

// noPartials answers every partial with nothing; NewCustom rejects
// templates that name one, so it is never asked.
type noPartials struct{}

func (noPartials) Get(string) (string, error) { return "", nil }

// NewCustom parses a custom page once. A malformed template is an error
// naming the line ("custom page: line 3: Section x has no closing tag").
func NewCustom(html string) (*Template, error) {
	t, err := mustache.ParseStringPartials(html, noPartials{})
	if err != nil {
		return nil, fmt.Errorf("custom page: %w", err)
	}
	if name, ok := findPartial(t.Tags()); ok {
		return nil, fmt.Errorf("custom page: partial %q: partials are not supported", name)
	}
	return &Template{t: t}, nil
}

// LoadCustom reads and parses the custom page in file path.
func LoadCustom(path string) (*Template, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read custom page: %w", err)
	}
	t, err := NewCustom(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

func findPartial(tags []mustache.Tag) (string, bool) {
	for _, tag := range tags {
		switch tag.Type() {
		case mustache.Partial:
			return tag.Name(), true
		case mustache.Section, mustache.InvertedSection:
			if name, ok := findPartial(tag.Tags()); ok {
				return name, true
			}
		}
	}
	return "", false
}

// Render renders the page with data's variables (Vars) to w. Nothing is
// written when rendering fails.
func (t *Template) Render(w io.Writer, data PageData) error {
	if t == nil || t.t == nil {
		return errors.New("render custom page: no template")
	}
	data.Lang = messagesFor(data.Lang).tag
	s, err := t.t.Render(data.Vars())
	if err != nil {
		return fmt.Errorf("render custom page: %w", err)
	}
	_, err = io.WriteString(w, s)
	return err
}

// Vars returns the variables of custom pages, Cloudflare's names and a few
// of usher's. Durations are whole minutes, rounded up; texts are in Lang.
//
//	waitTimeKnown                bool    the wait is known (false in pre-queue, queue-all, a new line)
//	waitTime                     int     estimated wait, minutes
//	waitTimeSeconds              int     the same wait in seconds
//	waitTimeFormatted            string  the wait in words: "3 minutes", "between 5 and 15 minutes"; "" when unknown
//	waitTimeHours                int     waitTime / 60
//	waitTimeHourMinutes          int     waitTime % 60
//	waitTimeLow, waitTimeHigh    int     random method: 25th and 75th percentile of the wait, minutes (0: none)
//	waitTime25Percentile         int     same as waitTimeLow (Cloudflare's name)
//	waitTime50Percentile         int     random method: waitTime, else 0 (Cloudflare's name)
//	waitTime75Percentile         int     same as waitTimeHigh (Cloudflare's name)
//	inWaitingRoom                bool    always true on the page
//	queueIsFull                  bool    always false: usher's queue has no cap
//	queueAll                     bool    the room lets nobody in for now
//	lastUpdated                  string  time of the decision, RFC 3339 UTC
//	refreshIntervalSeconds       int     seconds until the page checks in again
//	queueingMethod               string  fifo, random, passthrough or reject
//	isFIFOQueue, isRandomQueue   bool    the queueing method
//	position                     int     place in line, 1 is next (0 when not waiting)
//	peopleAhead                  int     position - 1
//	roomName                     string  the room's name
//	eventName                    string  the event's name ("" without one)
//	isEventPrequeueing           bool    waiting for an event that has not started
//	timeUntilEventStart          int     minutes until the event starts (0 without one, or once started)
//	timeUntilEventStartFormatted string  the same in words
//	eventStartTime               string  the event's start, RFC 3339 UTC ("" without one)
//	locale                       string  the page's language, BCP 47 (en-US, de-DE, ...)
//	usherRefreshMeta             string  <meta http-equiv="refresh" content="N">; use {{{usherRefreshMeta}}} in <head>
func (d PageData) Vars() map[string]any {
	p50 := int64(0)
	if d.IsRandom() {
		p50 = d.WaitMinutes
	}
	var until, untilFormatted any = int64(0), ""
	if !d.EventStart.IsZero() {
		until, untilFormatted = d.UntilStartMinutes(), d.UntilStartText()
	}
	return map[string]any{
		"waitTimeKnown":                d.WaitKnown,
		"waitTime":                     d.WaitMinutes,
		"waitTimeSeconds":              d.WaitSeconds,
		"waitTimeFormatted":            d.WaitFormatted(),
		"waitTimeHours":                d.WaitMinutes / 60,
		"waitTimeHourMinutes":          d.WaitMinutes % 60,
		"waitTimeLow":                  d.WaitLow,
		"waitTimeHigh":                 d.WaitHigh,
		"waitTime25Percentile":         d.WaitLow,
		"waitTime50Percentile":         p50,
		"waitTime75Percentile":         d.WaitHigh,
		"inWaitingRoom":                true,
		"queueIsFull":                  false,
		"queueAll":                     d.QueueAll,
		"lastUpdated":                  d.LastUpdatedISO(),
		"refreshIntervalSeconds":       d.RefreshSeconds,
		"queueingMethod":               d.QueueingMethod,
		"isFIFOQueue":                  d.IsFIFO(),
		"isRandomQueue":                d.IsRandom(),
		"position":                     d.Position,
		"peopleAhead":                  d.PeopleAhead,
		"roomName":                     d.RoomName,
		"eventName":                    d.EventName,
		"isEventPrequeueing":           d.Prequeue,
		"timeUntilEventStart":          until,
		"timeUntilEventStartFormatted": untilFormatted,
		"eventStartTime":               d.EventStartISO(),
		"locale":                       messagesFor(d.Lang).tag,
		"usherRefreshMeta":             RefreshMeta(d.RefreshSeconds),
	}
}

// RefreshMeta is the meta refresh tag of a page that checks in every
// seconds (at least 1).
func RefreshMeta(seconds int) string {
	return `<meta http-equiv="refresh" content="` + strconv.Itoa(max(seconds, 1)) + `">`
}
