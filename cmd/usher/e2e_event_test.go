package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// eventConfig is a room that turns everyone away (reject) except during a
// scheduled event: a 20 s pre-queue, then 60 s of fifo with its own limits
// and status code. Config times must carry a zone (Z or an offset); the
// test writes them in three different zones on purpose.
const eventConfig = `listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: drop
    name: Seal Brewing drop
    origin: %s
    routes:
      - path: /
    total_active_users: 100
    new_users_per_minute: 100
    session_duration: 15s
    queueing_method: reject
    queueing_status_code: 429
    refresh_interval: 2s
    json_response_enabled: true
    events:
      - name: Spring drop
        prequeue_start_time: %s
        event_start_time: %s
        event_end_time: %s
        shuffle_at_event_start: true
        queueing_method: fifo
        total_active_users: 20
        new_users_per_minute: 60
        session_duration: 15s
        refresh_interval: 2s
        queueing_status_code: 202
`

// eventLimits are the event's limits, which the event window must hold.
var eventLimits = bench.Limits{
	TotalActiveUsers:  20,
	NewUsersPerMinute: 60,
	SessionDuration:   15 * time.Second,
	RefreshInterval:   2 * time.Second,
}

const (
	eventRejectStatus  = http.StatusTooManyRequests // the room's queueing_status_code
	eventWaitingStatus = http.StatusAccepted        // the event's
	eventRefresh       = 2 * time.Second
)

// eventProbe is one JSON request by a visitor without cookies.
type eventProbe struct {
	status      int
	contentType string
	sent, recv  time.Time
	waiting     map[string]any // usherWaitingRoom, nil when absent
}

func probeEvent(t *testing.T, url string) eventProbe {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/json")
	p := eventProbe{sent: time.Now()}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	p.recv = time.Now()
	p.status, p.contentType = resp.StatusCode, resp.Header.Get("Content-Type")
	if strings.Contains(p.contentType, "json") {
		var doc struct {
			W map[string]any `json:"usherWaitingRoom"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			t.Fatalf("probe: %v\n%s", err, body)
		}
		p.waiting = doc.W
	}
	return p
}

// TestE2EEventPrequeueThenReject runs a scheduled event on a short
// timeline against the real binary: 40 visitors arrive during the
// pre-queue, 30 during the event, 10 after it.
func TestE2EEventPrequeueThenReject(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	usherBinary(t) // build first: the schedule starts from the config's writing

	origin := bench.NewOrigin("event shop")
	srv := httptest.NewServer(origin)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	addr := freeAddr(t)
	prequeue := time.Now().Truncate(time.Second).Add(6 * time.Second)
	start := prequeue.Add(20 * time.Second)
	end := start.Add(60 * time.Second)
	config := filepath.Join(dir, "usher.yaml")
	body := fmt.Sprintf(eventConfig, addr, filepath.Join(dir, "data"), srv.URL,
		prequeue.UTC().Format(time.RFC3339),
		start.In(time.FixedZone("", 2*3600)).Format(time.RFC3339),
		end.In(time.FixedZone("", -5*3600)).Format(time.RFC3339))
	if err := os.WriteFile(config, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, config, addr, "drop")
	if !time.Now().Before(prequeue.Add(-time.Second)) {
		t.Fatalf("usher took too long to start: the pre-queue opened at %s", prequeue.Format(time.RFC3339))
	}
	target := "http://" + addr + "/"

	// Before the pre-queue the room is a reject room.
	if p := probeEvent(t, target); p.status != eventRejectStatus || !strings.HasPrefix(p.contentType, "text/html") {
		t.Errorf("before the pre-queue: %d %s, want the reject page with %d", p.status, p.contentType, eventRejectStatus)
	}

	time.Sleep(time.Until(prequeue.Add(100 * time.Millisecond)))
	p := probeEvent(t, target)
	checkPrequeueJSON(t, p, start)

	// The visitors: offsets from the run's start, about 200 ms into the
	// pre-queue.
	time.Sleep(time.Until(prequeue.Add(200 * time.Millisecond)))
	runStart := time.Now()
	var offsets []time.Duration
	for i := range 40 {
		offsets = append(offsets, time.Duration(i)*375*time.Millisecond)
	}
	for i := range 30 {
		offsets = append(offsets, start.Sub(runStart)+500*time.Millisecond+time.Duration(i)*time.Second)
	}
	for i := range 10 {
		offsets = append(offsets, end.Sub(runStart)+2*time.Second+time.Duration(i)*time.Second)
	}
	tl, err := bench.Run(context.Background(), bench.Config{
		Target:   target,
		Arrivals: bench.ArrivalsAt(offsets...),
		Seed:     7,
		Model: bench.VisitorModel{
			Browse:          bench.Uniform(5*time.Second, 15*time.Second),
			RequestEvery:    bench.Uniform(time.Second, 3*time.Second),
			AbandonFraction: 0.15,
			Patience:        bench.Uniform(10*time.Second, 45*time.Second),
		},
		Timeout:    10 * time.Second,
		RetryDelay: time.Second,
		MaxErrors:  3,
		Horizon:    end.Add(25 * time.Second).Sub(runStart),
	})
	if err != nil {
		t.Fatal(err)
	}
	if t.Failed() {
		return
	}

	ev := eventRun{t: t, tl: tl, prequeue: prequeue, start: start, end: end}
	ev.classify()
	ev.checkPrequeue()
	ev.checkPrequeueFirst()
	ev.checkEventLimits()
	ev.checkAfterEnd()
	ev.checkSessionsKept()
	if t.Failed() {
		js, _ := json.MarshalIndent(tl, "", "  ")
		log, _ := os.ReadFile(config + ".log")
		t.Logf("timeline:\n%s\nusher log:\n%s", js, log)
	}
}

// checkPrequeueJSON checks the JSON of a pre-queue answer.
func checkPrequeueJSON(t *testing.T, p eventProbe, start time.Time) {
	t.Helper()
	w := p.waiting
	if p.status != eventWaitingStatus || w == nil {
		t.Fatalf("pre-queue answer: %d %s %v, want a JSON waiting answer with %d", p.status, p.contentType, w, eventWaitingStatus)
	}
	lo, hi := secondsUntil(p.recv, start), secondsUntil(p.sent, start)
	secs, _ := w["timeUntilEventStartSeconds"].(float64)
	// The refresh is the event's 2 s plus the visitor's jitter (up to a
	// tenth either way), rounded up to whole seconds: 2 or 3.
	refresh, _ := w["refreshIntervalSeconds"].(float64)
	if w["isEventPrequeueing"] != true || w["eventName"] != "Spring drop" || w["timeUntilEventStart"] != float64(1) ||
		secs < float64(lo) || secs > float64(hi) || w["waitTimeKnown"] != true || refresh < 2 || refresh > 3 {
		t.Errorf("pre-queue JSON %v: want isEventPrequeueing, eventName \"Spring drop\", timeUntilEventStart 1, timeUntilEventStartSeconds in [%d, %d], refresh 2 or 3", w, lo, hi)
	}
}

// secondsUntil is ceil(to - from) in seconds.
func secondsUntil(from, to time.Time) int64 {
	d := to.Sub(from)
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// eventRun checks a timeline against the event's schedule. Times are
// certain only within a request's round trip: usher saw a request at
// some moment between its sending and its answer.
type eventRun struct {
	t                    *testing.T
	tl                   *bench.Timeline
	prequeue, start, end time.Time
	// The visitors by when they arrived: during the pre-queue (first
	// answer before the start), after the start and before the end
	// (first request sent at or after the start), after the end.
	pre, during, after []*bench.Visitor
}

func (ev *eventRun) classify() {
	for i := range ev.tl.Visitors {
		v := &ev.tl.Visitors[i]
		ack := v.ArrivalAck
		if ack.IsZero() {
			ack = v.Arrival
		}
		switch {
		case v.Arrival.IsZero():
			ev.t.Errorf("%s never got an answer", v.ID)
		case ack.Before(ev.start) && !v.Arrival.Before(ev.prequeue):
			ev.pre = append(ev.pre, v)
		case !v.Arrival.Before(ev.start) && ack.Before(ev.end):
			ev.during = append(ev.during, v)
		case !v.Arrival.Before(ev.end):
			ev.after = append(ev.after, v)
		default:
			ev.t.Errorf("%s arrived across a phase boundary (%s to %s)", v.ID, v.Arrival.Format(time.StampMilli), ack.Format(time.StampMilli))
		}
	}
	ev.t.Logf("arrivals: %d in the pre-queue, %d during the event, %d after it", len(ev.pre), len(ev.during), len(ev.after))
	if len(ev.pre) != 40 || len(ev.during) != 30 || len(ev.after) != 10 {
		ev.t.Errorf("the arrivals missed their phases: want 40, 30, 10")
	}
}

// checkPrequeue: before the start nobody is admitted, and every request
// got a waiting answer marked pre-queue; from the start on, none is.
func (ev *eventRun) checkPrequeue() {
	for i := range ev.tl.Visitors {
		v := &ev.tl.Visitors[i]
		if !v.Admitted.IsZero() && v.Admitted.Before(ev.start) {
			ev.t.Errorf("%s admitted at %s, before the event started", v.ID, v.Admitted.Format(time.StampMilli))
		}
		for _, c := range v.CheckIns {
			switch {
			case c.At.Before(ev.start) && !c.Prequeue:
				ev.t.Errorf("%s: waiting answer at %s, in the pre-queue, not marked pre-queue", v.ID, c.At.Format(time.StampMilli))
			case !c.Sent.Before(ev.start) && c.Prequeue:
				ev.t.Errorf("%s: waiting answer sent at %s, after the start, marked pre-queue", v.ID, c.Sent.Format(time.StampMilli))
			}
		}
		for _, e := range v.Errors {
			if e.At.Before(ev.start) {
				ev.t.Errorf("%s: error in the pre-queue: %+v", v.ID, e)
			}
		}
	}
	for _, v := range ev.pre {
		if len(v.CheckIns) == 0 || !v.CheckIns[0].Prequeue {
			ev.t.Errorf("%s arrived in the pre-queue without a pre-queue answer", v.ID)
		}
	}
}

// checkPrequeueFirst: every pre-queued visitor still there at the start
// goes in before anyone who arrived after the start. Precisely: once a
// later arrival B is admitted, no pre-queued visitor A is told to wait
// again, and every such A is admitted by its next check-in (one refresh
// interval, jitter and round trip included) unless it left first. (A
// may go in just after B: when the free slots outnumber the pre-queued
// visitors left, B takes a slot that A still finds free when it checks in.)
// The shuffle is checked too: the first wave is not the earliest arrivals.
func (ev *eventRun) checkPrequeueFirst() {
	var firstLater time.Time
	var firstLaterID string
	for _, b := range ev.during {
		if !b.Admitted.IsZero() && (firstLater.IsZero() || b.Admitted.Before(firstLater)) {
			firstLater, firstLaterID = b.Admitted, b.ID
		}
	}
	admittedPre, late := 0, 0
	for _, a := range ev.pre {
		if !a.Abandoned.IsZero() && a.Abandoned.Before(ev.start) {
			continue // not there at the start
		}
		if !a.Admitted.IsZero() {
			admittedPre++
		}
		if firstLater.IsZero() {
			continue
		}
		for _, c := range a.CheckIns {
			if !c.Sent.Before(firstLater) {
				ev.t.Errorf("pre-queued %s told to wait (sent %s) after %s, who arrived after the start, was admitted at %s",
					a.ID, c.Sent.Format(time.StampMilli), firstLaterID, firstLater.Format(time.StampMilli))
			}
		}
		switch {
		case a.Admitted.IsZero() && a.Abandoned.IsZero():
			ev.t.Errorf("pre-queued %s was never admitted, though later arrivals were (first: %s)", a.ID, firstLaterID)
		case a.Admitted.IsZero():
		case a.AdmittedSent.After(firstLater.Add(eventRefresh + eventRefresh/10 + 500*time.Millisecond)):
			ev.t.Errorf("pre-queued %s admitted at %s, more than a refresh interval after %s, who arrived after the start (%s)",
				a.ID, a.Admitted.Format(time.StampMilli), firstLaterID, firstLater.Format(time.StampMilli))
		case a.Admitted.After(firstLater):
			late++
		}
	}
	ev.t.Logf("pre-queued visitors admitted: %d; first later arrival admitted at +%s (%s); pre-queued admitted at their next check-in after it: %d",
		admittedPre, firstLater.Sub(ev.start).Round(time.Millisecond), firstLaterID, late)
	if firstLater.IsZero() {
		ev.t.Error("no visitor who arrived after the start was admitted: the run did not exercise the order")
	}

	// The shuffle: the first wave is not simply the earliest pre-queued
	// arrivals. It goes in within a few refresh intervals of the start (a
	// place held by someone who left just before the start frees after
	// one refresh interval and the grace), and no session of it ends
	// before start + session_duration.
	var wave, earliest int
	for i, a := range ev.pre { // in order of arrival
		if !a.Admitted.IsZero() && a.Admitted.Before(ev.start.Add(4*eventRefresh)) {
			wave++
			if i < eventLimits.TotalActiveUsers {
				earliest++
			}
		}
	}
	ev.t.Logf("first wave: %d admitted, %d of them among the %d earliest arrivals", wave, earliest, eventLimits.TotalActiveUsers)
	if wave != eventLimits.TotalActiveUsers {
		ev.t.Errorf("first wave: %d admitted at the start, want %d (the event's total_active_users)", wave, eventLimits.TotalActiveUsers)
	}
	if earliest == wave {
		ev.t.Error("the first wave is exactly the earliest pre-queued arrivals: shuffle_at_event_start had no effect")
	}
}

// checkEventLimits measures the event window, [start, end), against the
// event's limits, and FIFO among the visitors who arrived during it.
func (ev *eventRun) checkEventLimits() {
	window := *ev.tl
	window.Start, window.End = ev.start, ev.end
	res := bench.Report(&window, eventLimits)
	js, _ := json.MarshalIndent(res, "", "  ")
	ev.t.Logf("event window report:\n%s", js)
	if res.MaxActiveRatio > 1 {
		ev.t.Errorf("active users reached %d, over the event's limit of %d", res.MaxActive, eventLimits.TotalActiveUsers)
	}
	if res.MaxRateRatio > 1 {
		ev.t.Errorf("%d admissions in 60 s, over the event's limit of %d", res.MaxRate, eventLimits.NewUsersPerMinute)
	}
	if res.MaxActive != eventLimits.TotalActiveUsers {
		ev.t.Errorf("active users peaked at %d: the event's limit of %d was never reached", res.MaxActive, eventLimits.TotalActiveUsers)
	}
	if res.Utilization < 0.8 {
		ev.t.Errorf("utilisation while visitors waited during the event: %.3f, want at least 0.8", res.Utilization)
	}
	// Where slots stood free while visitors waited, for longer than a
	// refresh interval (a place held by a visitor who left frees only
	// after its check-in is overdue by the grace).
	var idleFrom time.Duration = -1
	for _, sm := range bench.Series(&window, eventLimits, bench.SampleEvery) {
		free := min(eventLimits.TotalActiveUsers-sm.Active, eventLimits.NewUsersPerMinute-sm.AdmittedPerMinute)
		switch {
		case sm.Waiting > 0 && free > 0 && idleFrom < 0:
			idleFrom = sm.T
		case (sm.Waiting == 0 || free <= 0) && idleFrom >= 0:
			if sm.T-idleFrom > eventRefresh {
				ev.t.Logf("slots free while visitors waited from +%s to +%s", idleFrom, sm.T)
			}
			idleFrom = -1
		}
	}
	// The report's FIFO inversions count the shuffled pre-queue; among
	// the visitors who arrived during the event there must be none.
	later := bench.Timeline{Start: ev.start, End: ev.tl.End}
	for _, v := range ev.during {
		later.Visitors = append(later.Visitors, *v)
	}
	if n := bench.Report(&later, eventLimits).FIFOInversions; n != 0 {
		ev.t.Errorf("%d FIFO inversions among the visitors who arrived during the event", n)
	}
}

// checkAfterEnd: from the end on, the room turns away everyone without a
// session, with the reject page and the room's status code; nobody is
// told to wait or admitted.
func (ev *eventRun) checkAfterEnd() {
	turned := 0
	for i := range ev.tl.Visitors {
		v := &ev.tl.Visitors[i]
		if !v.Admitted.IsZero() && !v.AdmittedSent.Before(ev.end) {
			ev.t.Errorf("%s admitted (request sent %s) after the end", v.ID, v.AdmittedSent.Format(time.StampMilli))
		}
		for _, c := range v.CheckIns {
			if !c.Sent.Before(ev.end) {
				ev.t.Errorf("%s told to wait (sent %s) after the end", v.ID, c.Sent.Format(time.StampMilli))
			}
		}
		if v.Admitted.IsZero() {
			for _, e := range v.Errors {
				if e.Kind != bench.ErrStatus || e.Status != eventRejectStatus {
					ev.t.Errorf("%s: %+v, want the reject page (%s %d)", v.ID, e, bench.ErrStatus, eventRejectStatus)
				}
				turned++
			}
		}
	}
	for _, v := range ev.after {
		if !v.Admitted.IsZero() || len(v.CheckIns) != 0 || !v.GaveUp || len(v.Errors) != 3 {
			ev.t.Errorf("%s arrived after the end: admitted %v, %d check-ins, gave up %v, %d errors; want turned away 3 times",
				v.ID, !v.Admitted.IsZero(), len(v.CheckIns), v.GaveUp, len(v.Errors))
		}
	}
	ev.t.Logf("reject answers after the end: %d", turned)
}

// checkSessionsKept: visitors admitted during the event keep their session
// past its end: every request while browsing reached the origin.
func (ev *eventRun) checkSessionsKept() {
	across := 0
	for i := range ev.tl.Visitors {
		v := &ev.tl.Visitors[i]
		if v.Admitted.IsZero() {
			continue
		}
		if v.Requeued != 0 || len(v.Errors) != 0 {
			ev.t.Errorf("admitted %s: requeued %d times, errors %+v", v.ID, v.Requeued, v.Errors)
		}
		if last := v.Requests[len(v.Requests)-1]; !last.Before(ev.end) {
			across++
		}
	}
	ev.t.Logf("admitted visitors still browsing after the end: %d", across)
	if across == 0 {
		ev.t.Error("no admitted visitor made a request after the end: sessions across the end were not exercised")
	}
}
