package notify

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
)

// ReporterWindow is how long one node of several sharing a store sends
// the room events a monitor finds (see MonitorOptions.Claim).
const ReporterWindow = 10 * time.Second

// MonitorOptions configure a Monitor.
type MonitorOptions struct {
	// Rooms returns the rooms in force. Required.
	Rooms func() []*usher.Room
	// Stats reads a room's shared counters. Required.
	Stats func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)
	// Claim, on nodes sharing a store, makes one node the reporter of each
	// ReporterWindow: it returns true to the first node that claims key,
	// until until (the store's Spend). Nil: this node always reports.
	Claim func(ctx context.Context, key string, until time.Time) bool
	// Logger receives store errors (nil: slog.Default()).
	Logger *slog.Logger
	// Draws, when not nil, reads a room's verifiable draws (the engine's
	// Draws): the monitor tells each draw committed and revealed.
	Draws func(ctx context.Context, room *usher.Room, now time.Time) (draw.Room, error)
}

// Monitor finds the room events that no single request causes, by
// reading each room's settings in force and shared counters once a
// second while anything listens: queueing started and stopped, an event's
// pre-queue, start and end, and the per-minute summary.
//
// A room is queueing while it is not suspended and new visitors would
// wait rather than go in: queue_all is in force, an event's pre-queue
// runs, or live waiters are counted. queueing.started is sent at the
// first check that finds one of these, queueing.stopped at the first that
// finds none.
type Monitor struct {
	bus   *Bus
	opts  MonitorOptions
	rooms map[string]*roomState
	draws map[string]*drawsState // by room (draws.go)
	kick  chan struct{}
	// counts holds this node's arrivals and admissions by room for the
	// summary; replaced (never changed) when the rooms change.
	counts atomic.Pointer[map[string]*roomCounts]
	// reporter: the window this node claimed, or lost.
	window  int64
	reports bool
}

type roomCounts struct{ arrivals, admissions atomic.Int64 }

// roomState is what the monitor last found in a room.
type roomState struct {
	queueing    bool
	since       time.Time
	phase       usher.Phase
	event       string
	eventStart  time.Time
	minute      int64 // unix minute the peaks are of
	waitingPeak int64
	activePeak  int64
	samples     int
}

// NewMonitor returns a monitor publishing on b.
func NewMonitor(b *Bus, opts MonitorOptions) *Monitor {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	m := &Monitor{bus: b, opts: opts, rooms: map[string]*roomState{}, draws: map[string]*drawsState{}, kick: make(chan struct{}, 1)}
	empty := map[string]*roomCounts{}
	m.counts.Store(&empty)
	return m
}

// Kick asks for a check at once (a setting changed), without blocking.
func (m *Monitor) Kick() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// CountVisit counts, for the summary, a new visitor given a ticket
// (arrival) and an admission on this node. It does not allocate.
func (m *Monitor) CountVisit(room string, arrival, admitted bool) {
	c := (*m.counts.Load())[room]
	if c == nil {
		return
	}
	if arrival {
		c.arrivals.Add(1)
	}
	if admitted {
		c.admissions.Add(1)
	}
}

// KickDelay is how long after a kick the monitor checks: the change that
// kicked it publishes its own event (room.settings_changed) first.
const KickDelay = 100 * time.Millisecond

// Run checks at once, then every interval, on whole seconds (so that
// nodes check together), and KickDelay after a kick, until ctx ends.
func (m *Monitor) Run(ctx context.Context, now func() time.Time, every time.Duration) {
	m.Check(ctx, now())
	for {
		t := now()
		wait := every - time.Duration(t.UnixNano()%int64(every))
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-m.kick:
			timer.Stop()
			select {
			case <-ctx.Done():
				return
			case <-time.After(KickDelay):
			}
		case <-timer.C:
		}
		m.Check(ctx, now())
	}
}

// Check reads every room once and publishes what changed since the last
// check. While nothing listens it only keeps the room list.
func (m *Monitor) Check(ctx context.Context, now time.Time) {
	rooms := m.opts.Rooms()
	m.syncCounts(rooms)
	if !m.bus.Listening() {
		clear(m.rooms) // state found again when something listens
		clear(m.draws)
		return
	}
	report := m.reporter(ctx, now)
	seen := make(map[string]bool, len(rooms))
	for _, rm := range rooms {
		seen[rm.ID] = true
		st, err := m.opts.Stats(ctx, rm, now)
		if err != nil {
			if ctx.Err() == nil {
				m.opts.Logger.Debug("event monitor: room counters not read", "room", rm.ID, "err", err)
			}
			continue
		}
		m.checkRoom(rm, st, now, report)
		m.checkDraws(ctx, rm, now, report)
	}
	for id := range m.rooms {
		if !seen[id] {
			delete(m.rooms, id)
		}
	}
	for id := range m.draws {
		if !seen[id] {
			delete(m.draws, id)
		}
	}
}

// reporter reports whether this node sends the room events of now's
// window.
func (m *Monitor) reporter(ctx context.Context, now time.Time) bool {
	if m.opts.Claim == nil {
		return true
	}
	w := now.Unix() / int64(ReporterWindow/time.Second)
	if w != m.window {
		m.window = w
		end := time.Unix((w+1)*int64(ReporterWindow/time.Second), 0)
		m.reports = m.opts.Claim(ctx, "reporter/"+time.Unix(w*int64(ReporterWindow/time.Second), 0).UTC().Format(time.RFC3339), end.Add(ReporterWindow))
	}
	return m.reports
}

func (m *Monitor) syncCounts(rooms []*usher.Room) {
	cur := *m.counts.Load()
	same := len(cur) == len(rooms)
	for _, rm := range rooms {
		if cur[rm.ID] == nil {
			same = false
		}
	}
	if same {
		return
	}
	next := make(map[string]*roomCounts, len(rooms))
	for _, rm := range rooms {
		if c := cur[rm.ID]; c != nil {
			next[rm.ID] = c
		} else {
			next[rm.ID] = &roomCounts{}
		}
	}
	m.counts.Store(&next)
}

// queueingReason says why a room queues now, "" when it does not.
func queueingReason(sched *usher.Schedule, st usher.RoomStats) string {
	s := &sched.Settings
	switch {
	case s.Suspended:
		return ""
	case s.QueueAll:
		return "queue_all"
	case sched.Phase == usher.Prequeue:
		return "prequeue"
	case st.Waiting > 0:
		return "waiters"
	}
	return ""
}

func (m *Monitor) checkRoom(rm *usher.Room, st usher.RoomStats, now time.Time, report bool) {
	sched := rm.At(now)
	s := &sched.Settings
	reason := queueingReason(&sched, st)
	event, start := "", time.Time{}
	if sched.Event != nil {
		event, start = sched.Event.Name, sched.Event.Start
	}
	minute := now.Unix() / 60
	prev := m.rooms[rm.ID]
	if prev == nil {
		// First sight: nothing changed yet.
		if c := (*m.counts.Load())[rm.ID]; c != nil {
			c.arrivals.Store(0)
			c.admissions.Store(0)
		}
		m.rooms[rm.ID] = &roomState{queueing: reason != "", since: now, phase: sched.Phase, event: event, eventStart: start,
			minute: minute, waitingPeak: st.Waiting, activePeak: st.Active, samples: 1}
		return
	}
	publish := func(typ string, data any) {
		if report {
			m.bus.Publish(Event{Type: typ, Room: rm.ID, Time: now, Data: data})
		}
	}
	counters := roomCountersJSON{Active: st.Active, Waiting: st.Waiting, AdmittedLastMinute: st.AdmittedLastMinute, Slots: st.Slots}
	// Events first: an event's start may start the queueing.
	if prev.event != event || prev.phase != sched.Phase {
		if prev.event != "" && prev.event != event {
			publish(EventEnded, eventJSON{Name: prev.event, Start: prev.eventStart, Counters: counters})
		}
		if event != "" {
			ev := sched.Event
			data := eventJSON{Name: ev.Name, Start: ev.Start, End: ev.End, Counters: counters,
				TotalActiveUsers: s.TotalActiveUsers, NewUsersPerMinute: s.NewUsersPerMinute, QueueingMethod: string(s.QueueingMethod)}
			if !ev.PrequeueStart.IsZero() {
				data.PrequeueStart = &ev.PrequeueStart
			}
			switch {
			case sched.Phase == usher.Prequeue && (prev.event != event || prev.phase != usher.Prequeue):
				publish(EventPrequeueOpened, data)
			case sched.Phase == usher.Running:
				publish(EventStarted, data)
			}
		}
		prev.phase, prev.event, prev.eventStart = sched.Phase, event, start
	}
	if q := reason != ""; q != prev.queueing {
		if q {
			publish(QueueingStarted, queueingJSON{Reason: reason, Counters: counters})
		} else {
			publish(QueueingStopped, queueingJSON{LastedSeconds: int64(now.Sub(prev.since).Seconds()), Counters: counters})
		}
		prev.queueing, prev.since = q, now
	}
	if minute != prev.minute {
		c := (*m.counts.Load())[rm.ID]
		var arrivals, admissions int64
		if c != nil {
			arrivals, admissions = c.arrivals.Swap(0), c.admissions.Swap(0)
		}
		if prev.minute == minute-1 {
			publish(SummaryMinute, summaryJSON{
				Minute: time.Unix(prev.minute*60, 0).UTC(), Counters: counters,
				WaitingPeak: max(prev.waitingPeak, st.Waiting), ActivePeak: max(prev.activePeak, st.Active),
				Queueing: prev.queueing, Arrivals: arrivals, Admissions: admissions, Samples: prev.samples,
				TotalActiveUsers: s.TotalActiveUsers, NewUsersPerMinute: s.NewUsersPerMinute,
			})
		}
		prev.minute, prev.waitingPeak, prev.activePeak, prev.samples = minute, st.Waiting, st.Active, 1
		return
	}
	prev.waitingPeak = max(prev.waitingPeak, st.Waiting)
	prev.activePeak = max(prev.activePeak, st.Active)
	prev.samples++
}

// roomCountersJSON are a room's shared counters when an event was found.
type roomCountersJSON struct {
	Active             int64 `json:"active"`
	Waiting            int64 `json:"waiting"`
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
	Slots              int64 `json:"slots"`
}

type queueingJSON struct {
	// Reason is why the room queues: queue_all, prequeue or waiters.
	Reason        string           `json:"reason,omitempty"`
	LastedSeconds int64            `json:"lasted_seconds,omitempty"`
	Counters      roomCountersJSON `json:"counters"`
}

type eventJSON struct {
	Name              string           `json:"name"`
	PrequeueStart     *time.Time       `json:"prequeue_start_time,omitempty"`
	Start             time.Time        `json:"event_start_time"`
	End               time.Time        `json:"event_end_time,omitzero"`
	TotalActiveUsers  int              `json:"total_active_users,omitempty"`
	NewUsersPerMinute int              `json:"new_users_per_minute,omitempty"`
	QueueingMethod    string           `json:"queueing_method,omitempty"`
	Counters          roomCountersJSON `json:"counters"`
}

type summaryJSON struct {
	Minute            time.Time        `json:"minute"`
	Counters          roomCountersJSON `json:"counters"`
	WaitingPeak       int64            `json:"waiting_peak"`
	ActivePeak        int64            `json:"active_peak"`
	Queueing          bool             `json:"queueing"`
	Arrivals          int64            `json:"arrivals"`
	Admissions        int64            `json:"admissions"`
	Samples           int              `json:"samples"`
	TotalActiveUsers  int              `json:"total_active_users"`
	NewUsersPerMinute int              `json:"new_users_per_minute"`
}
