package web

import "math"

// LiveData is what the page's script reads to keep the page live (the
// "script" template writes it as JSON in a <script type="application/json"
// id="usher-live"> element): the state the page shows, and the texts it
// needs to show a later state, in the page's language.
//
// With JSON set, the script checks in with the JSON of the same URL at the
// moments the server gives (Refresh, then each answer's
// refreshIntervalSeconds) and updates the page in place; without it, it
// reloads the page at those moments, as the meta refresh would.
type LiveData struct {
	// JSON reports that the room answers JSON (json_response_enabled).
	JSON bool `json:"json"`
	// Page is the page shown: PageWaiting or PagePrequeue.
	Page string `json:"page"`
	// Refresh is RefreshSeconds: when the first check-in is due.
	Refresh int `json:"refresh"`
	// Method, QueueAll and Prequeue are the state the page was written
	// for; a check-in that answers another state reloads the page.
	Method   string `json:"method"`
	QueueAll bool   `json:"queueAll"`
	Prequeue bool   `json:"prequeue"`
	// Position, WaitKnown and WaitSeconds are the page's place and wait.
	Position    int64 `json:"position"`
	WaitKnown   bool  `json:"waitKnown"`
	WaitSeconds int64 `json:"waitSeconds"`
	// Room is the room's name, for the title and the notifications.
	Room string `json:"room"`
	// Group and MinGroup write numbers as Messages.Number does.
	Group    string `json:"group"`
	MinGroup int    `json:"minGroup"`
	// Text holds the texts, with their placeholders ("{n}", "{wait}",
	// "{place}"); a Plural is two entries, NAME.one and NAME.other.
	Text map[string]string `json:"text"`
}

// Live returns the page's LiveData.
func (d PageData) Live() LiveData {
	m := d.Msg()
	page := PageWaiting
	if d.Prequeue {
		page = PagePrequeue
	}
	return LiveData{
		JSON: d.JSONEnabled, Page: page, Refresh: d.RefreshSeconds,
		Method: d.QueueingMethod, QueueAll: d.QueueAll, Prequeue: d.Prequeue,
		Position: d.Position, WaitKnown: d.WaitKnown, WaitSeconds: d.WaitSeconds,
		Room: d.RoomName, Group: m.group, MinGroup: max(m.minGroup, 4),
		Text: map[string]string{
			"busy":          m.Busy,
			"title":         m.TitlePosition,
			"position":      m.Position,
			"next":          m.Next,
			"nobodyAhead":   m.NobodyAhead,
			"ahead.one":     m.Ahead.One,
			"ahead.other":   m.Ahead.Other,
			"about":         m.WaitAbout,
			"unknown":       m.WaitUnknown,
			"status":        m.LiveStatus,
			"goingIn":       m.GoingIn,
			"notifyOn":      m.NotifyOn,
			"notifyOff":     m.NotifyOff,
			"notifyBlocked": m.NotifyBlocked,
			"notifyNear":    m.NotifyNear,
			"notifyTurn":    m.NotifyTurn,
		},
	}
}

// Nearness returns 1 / (1 + w), w being seconds in minutes: 1 with
// nothing left to wait, 1/2 with a minute, 1/11 with ten; 0 when seconds
// is negative (the wait is not known). It is the progress bar's measure
// (PageData.Progress), which the page's script also computes from each
// check-in's waitTimeSeconds, and lets creep forward between check-ins as
// the wait runs down.
func Nearness(seconds int64) float64 {
	if seconds < 0 {
		return 0
	}
	return 1 / (1 + float64(seconds)/60)
}

// progressPercent is p as a whole percentage, 0 to 100.
func progressPercent(p float64) int {
	if math.IsNaN(p) {
		return 0
	}
	return int(math.Round(min(max(p, 0), 1) * 100))
}
