package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/web"
)

// waitingRoomJSON is the JSON answer to a waiter, under "usherWaitingRoom":
// Cloudflare's fields (cfWaitingRoom), so that apps port over, plus
// position, peopleAhead, waitTimeSeconds and timeUntilEventStartSeconds.
//
// While an event's pre-queue is open, isEventPrequeueing is true and
// timeUntilEventStart (whole minutes, rounded up) and
// timeUntilEventStartSeconds count down to its start; both are 0 otherwise.
// eventName is there only when the pre-queue's event has a name. With the
// random method and a known wait, waitTimeLow and waitTimeHigh are the 25th
// and 75th percentiles of the wait in whole minutes, and
// waitTimeLowSeconds and waitTimeHighSeconds the same in whole seconds;
// they are left out otherwise.
type waitingRoomJSON struct {
	InWaitingRoom              bool   `json:"inWaitingRoom"`
	WaitTimeKnown              bool   `json:"waitTimeKnown"`
	WaitTime                   int64  `json:"waitTime"`
	WaitTimeSeconds            int64  `json:"waitTimeSeconds"`
	WaitTimeLow                *int64 `json:"waitTimeLow,omitempty"`
	WaitTimeHigh               *int64 `json:"waitTimeHigh,omitempty"`
	WaitTimeLowSeconds         *int64 `json:"waitTimeLowSeconds,omitempty"`
	WaitTimeHighSeconds        *int64 `json:"waitTimeHighSeconds,omitempty"`
	WaitTimeFormatted          string `json:"waitTimeFormatted"`
	QueueIsFull                bool   `json:"queueIsFull"`
	QueueAll                   bool   `json:"queueAll"`
	LastUpdated                string `json:"lastUpdated"`
	RefreshIntervalSeconds     int    `json:"refreshIntervalSeconds"`
	QueueingMethod             string `json:"queueingMethod"`
	IsFIFOQueue                bool   `json:"isFIFOQueue"`
	IsRandomQueue              bool   `json:"isRandomQueue"`
	Position                   int64  `json:"position"`
	PeopleAhead                int64  `json:"peopleAhead"`
	IsEventPrequeueing         bool   `json:"isEventPrequeueing"`
	TimeUntilEventStart        int64  `json:"timeUntilEventStart"`
	TimeUntilEventStartSeconds int64  `json:"timeUntilEventStartSeconds"`
	EventName                  string `json:"eventName,omitempty"`
	DrawID                     string `json:"drawId,omitempty"`
	DrawEntry                  string `json:"drawEntry,omitempty"`
}

func newWaitingRoomJSON(pd web.PageData) waitingRoomJSON {
	j := waitingRoomJSON{
		InWaitingRoom:          true,
		WaitTimeKnown:          pd.WaitKnown,
		WaitTime:               pd.WaitMinutes,
		WaitTimeSeconds:        pd.WaitSeconds,
		WaitTimeFormatted:      pd.WaitFormatted(),
		QueueIsFull:            false, // usher never caps its queue
		QueueAll:               pd.QueueAll,
		LastUpdated:            pd.LastUpdated.UTC().Format(time.RFC3339),
		RefreshIntervalSeconds: pd.RefreshSeconds,
		QueueingMethod:         pd.QueueingMethod,
		IsFIFOQueue:            pd.IsFIFO(),
		IsRandomQueue:          pd.IsRandom(),
		Position:               pd.Position,
		PeopleAhead:            pd.PeopleAhead,
	}
	if pd.HasRange() {
		low, high := pd.WaitLow, pd.WaitHigh
		j.WaitTimeLow, j.WaitTimeHigh = &low, &high
		lowS, highS := pd.WaitLowSeconds, pd.WaitHighSeconds
		j.WaitTimeLowSeconds, j.WaitTimeHighSeconds = &lowS, &highS
	}
	if pd.Prequeue {
		j.IsEventPrequeueing = true
		j.TimeUntilEventStart = pd.UntilStartMinutes()
		j.TimeUntilEventStartSeconds = pd.UntilStartSeconds()
		j.EventName = pd.EventName
	}
	return j
}

// settings are the settings in force for d: a running event's, else the
// room's.
func settings(m Match, d usher.Decision) *usher.Settings {
	if d.Settings.RefreshInterval == 0 && d.Settings.TotalActiveUsers == 0 {
		return &m.Room.Settings
	}
	return &d.Settings
}

// queueingStatus is the status of waiting and reject answers.
func queueingStatus(s *usher.Settings) int {
	if s.QueueingStatusCode == 0 {
		return http.StatusOK
	}
	return s.QueueingStatusCode
}

// answerStatus is the status of an answer that does not let the request
// through: the room's, except that a forward-auth answer is never 2xx (the
// proxy would take it for a yes): 429 for a waiting answer or a challenge,
// 403 for a reject.
func answerStatus(m Match, s *usher.Settings, reject bool) int {
	status := queueingStatus(s)
	if m.Auth && status < 300 {
		if reject {
			return http.StatusForbidden
		}
		return http.StatusTooManyRequests
	}
	return status
}

// wait answers a waiter: the waiting page, or JSON when the room allows it
// and the request asks for it. Never cached; the ticket cookie goes with it.
// The Refresh header (as Cloudflare's) tells apps when to check in again;
// browsers refresh at the same moment as the page's meta refresh.
func (g *Gate) wait(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	dropBody(w, r)
	g.setTicket(w, r, m, d)
	pd := pageData(r, m, d)
	set := settings(m, d)
	status := answerStatus(m, set, false)
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Refresh", strconv.Itoa(pd.RefreshSeconds))
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		h.Set("Retry-After", strconv.Itoa(pd.RefreshSeconds))
	}
	if set.JSONResponseEnabled {
		h.Add("Vary", "Accept")
	}
	h.Add("Vary", "Accept-Language")
	if set.JSONResponseEnabled && server.AcceptsJSON(r) {
		j := newWaitingRoomJSON(pd)
		j.DrawID, j.DrawEntry = drawOf(m, d, set)
		bp := jsonBuffers.Get().(*[]byte)
		*bp = appendWaitingJSON((*bp)[:0], &j)
		writeJSONBytes(w, r, status, *bp)
		if cap(*bp) <= 4<<10 {
			jsonBuffers.Put(bp)
		}
		return
	}
	page := web.PageWaiting
	if pd.Prequeue {
		page = web.PagePrequeue
	}
	if t := g.custom[set.CustomPageHTML]; t != nil {
		g.writeCustom(w, r, status, t, pd)
		return
	}
	g.writePage(w, r, status, page, pd)
}

// writeCustom renders an operator's page (waiting and pre-queue states).
func (g *Gate) writeCustom(w http.ResponseWriter, r *http.Request, status int, t *web.Template, pd web.PageData) {
	var buf bytes.Buffer
	if err := t.Render(&buf, pd); err != nil {
		g.fail(w, r, fmt.Errorf("room %q: custom page: %w", pd.RoomID, err))
		return
	}
	writeHTML(w, r, status, &buf)
}

// ClientLimitRetry is the Retry-After of a visitor refused by a per-client
// limit: the limit counts over a minute.
const ClientLimitRetry = 60

// reject answers a visitor the room turns away: the reject page, with the
// room's queueing status code, never cached; or, for a client over the
// room's per-client limit, 429 with Retry-After.
func (g *Gate) reject(w http.ResponseWriter, r *http.Request, m Match, d usher.Decision) {
	dropBody(w, r)
	if d.OverClient {
		w.Header().Set("Retry-After", strconv.Itoa(ClientLimitRetry))
		server.WriteError(w, r, http.StatusTooManyRequests, "too many new visits from your network: retry in a minute")
		return
	}
	g.setTicket(w, r, m, d)
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Add("Vary", "Accept-Language")
	g.writePage(w, r, answerStatus(m, settings(m, d), true), web.PageReject, pageData(r, m, d))
}

// pageData is the page data of decision d, in the visitor's language (the
// first of Accept-Language usher has, else the room's default).
func pageData(r *http.Request, m Match, d usher.Decision) web.PageData {
	pd := web.NewPageData(m.Room, d, m.At)
	pd.Lang = web.Language(r.Header.Get("Accept-Language"), settings(m, d).DefaultTemplateLanguage)
	return pd
}

// writePage renders page before writing anything, so that a template error
// becomes a clean 500.
func (g *Gate) writePage(w http.ResponseWriter, r *http.Request, status int, page string, pd web.PageData) {
	var buf bytes.Buffer
	if err := g.pages.Render(&buf, page, pd); err != nil {
		g.fail(w, r, fmt.Errorf("room %q: %w", pd.RoomID, err))
		return
	}
	writeHTML(w, r, status, &buf)
}

// writeHTML writes a rendered page with status (headers only for HEAD).
func writeHTML(w http.ResponseWriter, r *http.Request, status int, buf *bytes.Buffer) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = buf.WriteTo(w)
	}
}

// jsonBuffers holds the buffers waiting answers' JSON is rendered into.
var jsonBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// writeJSON writes v as JSON with status.
func (g *Gate) writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		g.fail(w, r, fmt.Errorf("encode json: %w", err))
		return
	}
	writeJSONBytes(w, r, status, append(b, '\n'))
}

// writeJSONBytes writes the JSON b with status (headers only for HEAD).
func writeJSONBytes(w http.ResponseWriter, r *http.Request, status int, b []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(b)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
