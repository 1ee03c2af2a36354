package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/usherhq/usher"
)

// The live stream: GET /api/v1/live sends every room's counters and limits
// once a second as server-sent events, for the dashboard.
const (
	// liveInterval is how often a snapshot is sent.
	liveInterval = time.Second
	// liveBuffer is how many snapshots wait for a subscriber that has not
	// taken them; one more and it is dropped (its stream ends).
	liveBuffer = 8
	// liveHeartbeat is how often a comment line goes out whatever else
	// does, so that proxies and clients see the stream alive while the
	// store is slow to answer.
	liveHeartbeat = 15 * time.Second
	// liveMaxSubscribers bounds the streams open at once on a node.
	liveMaxSubscribers = 64
	// liveWriteTimeout bounds one write to a subscriber's connection.
	liveWriteTimeout = 10 * time.Second
	// liveStatusTimeout bounds one room's status call in a snapshot.
	liveStatusTimeout = 2 * time.Second
	// liveRetry is the reconnection delay the stream suggests.
	liveRetry = 2 * time.Second
)

// LiveSnapshot is one message of GET /api/v1/live (event "snapshot").
type LiveSnapshot struct {
	Time  time.Time  `json:"time"`
	Rooms []LiveRoom `json:"rooms"`
}

// LiveRoom is a room's counters and the settings in force at a snapshot.
type LiveRoom struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Active is the admitted visitors whose session runs, against
	// TotalActiveUsers in force (an event's over the room's).
	Active           int64 `json:"active"`
	TotalActiveUsers int   `json:"total_active_users"`
	// AdmittedLastMinute is the admissions in the last 60 s, against
	// NewUsersPerMinute in force.
	AdmittedLastMinute int64 `json:"admitted_last_minute"`
	NewUsersPerMinute  int   `json:"new_users_per_minute"`
	// Waiting is the live waiters; Slots the visitors that could be
	// admitted now.
	Waiting        int64  `json:"waiting"`
	Slots          int64  `json:"slots"`
	QueueAll       bool   `json:"queue_all"`
	Suspended      bool   `json:"suspended"`
	QueueingMethod string `json:"queueing_method"`
	// Phase is "none", "prequeue" or "event"; Event is the event in
	// pre-queue or running (null: none), NextEvent the next one to open
	// (null: none scheduled).
	Phase     string     `json:"phase"`
	Event     *LiveEvent `json:"event"`
	NextEvent *LiveEvent `json:"next_event"`
	// Error says why the counters could not be read (they are zero).
	Error string `json:"error,omitempty"`
}

// LiveEvent is an event's name and window.
type LiveEvent struct {
	Name          string     `json:"name"`
	PrequeueStart *time.Time `json:"prequeue_start_time,omitempty"`
	Start         time.Time  `json:"event_start_time"`
	End           time.Time  `json:"event_end_time"`
}

func liveEvent(e *usher.Event) *LiveEvent {
	if e == nil {
		return nil
	}
	v := &LiveEvent{Name: e.Name, Start: e.Start.UTC(), End: e.End.UTC()}
	if !e.PrequeueStart.IsZero() {
		p := e.PrequeueStart.UTC()
		v.PrequeueStart = &p
	}
	return v
}

// nextEvent returns the room's event whose window opens first after now;
// nil when none does.
func nextEvent(rm *usher.Room, now time.Time) *usher.Event {
	var next *usher.Event
	for i := range rm.Events {
		e := &rm.Events[i]
		if e.WindowStart().After(now) && (next == nil || e.WindowStart().Before(next.WindowStart())) {
			next = e
		}
	}
	return next
}

// liveSnapshot reads every room's counters at now.
func (h *Handler) liveSnapshot(ctx context.Context, now time.Time) LiveSnapshot {
	rooms := h.rooms()
	out := LiveSnapshot{Time: now.UTC(), Rooms: make([]LiveRoom, 0, len(rooms))}
	for _, rm := range rooms {
		if rm == nil {
			continue
		}
		sched := rm.At(now)
		lr := LiveRoom{
			ID:                rm.ID,
			Name:              rm.Name,
			TotalActiveUsers:  sched.TotalActiveUsers,
			NewUsersPerMinute: sched.NewUsersPerMinute,
			QueueAll:          sched.QueueAll,
			Suspended:         sched.Suspended,
			QueueingMethod:    queueingMethod(sched.QueueingMethod),
			Phase:             sched.Phase.String(),
			Event:             liveEvent(sched.Event),
			NextEvent:         liveEvent(nextEvent(rm, now)),
		}
		if h.status == nil {
			lr.Error = "status unavailable"
		} else {
			sctx, cancel := context.WithTimeout(ctx, liveStatusTimeout)
			st, err := h.statusOf(sctx, rm, now)
			cancel()
			if err != nil {
				lr.Error = err.Error()
			} else {
				lr.Active, lr.Waiting, lr.AdmittedLastMinute, lr.Slots = st.Active, st.Waiting, st.AdmittedLastMinute, st.Slots
			}
		}
		out.Rooms = append(out.Rooms, lr)
	}
	return out
}

// Errors of subscribe.
var (
	errLiveClosed = errors.New("the live stream is shutting down")
	errLiveFull   = errors.New("too many live streams are open on this node")
)

// liveHub sends one snapshot a second to every subscriber. It reads the
// rooms once per tick however many subscribers there are, and runs only
// while there is at least one. A subscriber that does not take its
// snapshots is dropped once liveBuffer of them wait: the hub never blocks
// on a client.
type liveHub struct {
	// read returns the next message (a snapshot's JSON).
	read     func(ctx context.Context) []byte
	interval time.Duration
	max      int

	mu      sync.Mutex
	subs    map[*liveSub]struct{}
	last    []byte // the latest message, for a new subscriber
	running bool
	closed  bool
	stop    chan struct{} // closed by close

	drops atomic.Int64 // subscribers dropped for falling behind
}

// liveSub is one subscriber: its queue of messages, closed when it is
// dropped or the hub closes.
type liveSub struct {
	ch      chan []byte
	dropped atomic.Bool // it fell behind (set before ch is closed)
}

func newLiveHub(read func(ctx context.Context) []byte, interval time.Duration, max int) *liveHub {
	return &liveHub{read: read, interval: interval, max: max, subs: make(map[*liveSub]struct{}), stop: make(chan struct{})}
}

// subscribe adds a subscriber, starting the hub if it was idle. The
// latest snapshot, if any, is queued at once.
func (l *liveHub) subscribe() (*liveSub, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errLiveClosed
	}
	if len(l.subs) >= l.max {
		return nil, errLiveFull
	}
	s := &liveSub{ch: make(chan []byte, liveBuffer)}
	if l.last != nil {
		s.ch <- l.last
	}
	l.subs[s] = struct{}{}
	if !l.running {
		l.running = true
		go l.run()
	}
	return s, nil
}

// unsubscribe removes s (a no-op when it was dropped already).
func (l *liveHub) unsubscribe(s *liveSub) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.subs[s]; ok {
		delete(l.subs, s)
		close(s.ch)
	}
}

// count returns the subscribers.
func (l *liveHub) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.subs)
}

// close ends every stream and refuses new ones.
func (l *liveHub) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	l.closed = true
	close(l.stop)
	for s := range l.subs {
		delete(l.subs, s)
		close(s.ch)
	}
}

// run publishes a snapshot now and at each tick until nobody listens.
func (l *liveHub) run() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(l.interval)
	defer t.Stop()
	for {
		msg := l.read(ctx)
		if !l.publish(msg) {
			return
		}
		select {
		case <-t.C:
		case <-l.stop:
			l.mu.Lock()
			l.running = false
			l.mu.Unlock()
			return
		}
	}
}

// publish queues msg for every subscriber, dropping those whose queue is
// full. It returns false, and marks the hub idle, when nobody is left.
func (l *liveHub) publish(msg []byte) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.subs) == 0 || l.closed {
		l.running = false
		l.last = nil
		return false
	}
	l.last = msg
	for s := range l.subs {
		select {
		case s.ch <- msg:
		default:
			s.dropped.Store(true)
			l.drops.Add(1)
			delete(l.subs, s)
			close(s.ch)
		}
	}
	return true
}

// Close ends the live streams in flight (GET /api/v1/live) and refuses new
// ones; call it when the server shuts down, so that they do not hold up a
// graceful shutdown.
func (h *Handler) Close() { h.live.close() }

// readLive returns the JSON of a snapshot of now.
func (h *Handler) readLive(ctx context.Context) []byte {
	b, err := json.Marshal(h.liveSnapshot(ctx, h.now()))
	if err != nil {
		// A LiveSnapshot always encodes; keep the stream's shape anyway.
		return []byte(`{"rooms":[]}`)
	}
	return b
}

// serveLive streams snapshots as server-sent events: "snapshot" events
// whose data is a LiveSnapshot, comment lines as heartbeats, and a
// "dropped" event before the stream ends when the client fell behind.
func (h *Handler) serveLive(w http.ResponseWriter, r *http.Request) {
	sub, err := h.live.subscribe()
	if err != nil {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, usher.EUnavailable, err.Error())
		return
	}
	defer h.live.unsubscribe(sub)
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream; charset=utf-8")
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(s string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(liveWriteTimeout))
		if _, err := w.Write([]byte(s)); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("retry: " + strconv.FormatInt(liveRetry.Milliseconds(), 10) + "\n: usher live\n\n") {
		return
	}
	hb := time.NewTicker(liveHeartbeat)
	defer hb.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-sub.ch:
			if sub.dropped.Load() {
				// What is still queued is stale: say why the stream ends.
				send("event: dropped\ndata: {\"reason\":\"the client fell behind\"}\n\n")
				return
			}
			if !ok {
				return
			}
			if !send("event: snapshot\ndata: " + string(msg) + "\n\n") {
				return
			}
		case <-hb.C:
			if !send(": heartbeat\n\n") {
				return
			}
		}
	}
}
