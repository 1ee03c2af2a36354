package notify

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Bounds of the event stream.
const (
	// DefaultHeartbeat is how often an idle stream gets a comment line,
	// so that proxies and clients see it is alive.
	DefaultHeartbeat = 15 * time.Second
	// DefaultStreamBuffer is how many events a subscriber may be behind
	// before it is cut off.
	DefaultStreamBuffer = 256
	// MaxSubscribers bounds the streams open at once.
	MaxSubscribers = 64
	// streamWriteTimeout bounds one write to a subscriber.
	streamWriteTimeout = 10 * time.Second
)

// streamItem is one event for a subscriber, encoded.
type streamItem struct {
	id, typ string
	body    []byte
}

// subscriber is one open stream.
type subscriber struct {
	rooms  []string // empty: every room
	types  []string // MatchType patterns; empty: every room event
	sample float64  // share of visitor events
	ch     chan *streamItem
	gone   chan struct{} // closed when cut off or ended
	once   sync.Once
	cut    atomic.Bool // cut off for falling behind
}

func (s *subscriber) wants(ev *Event, p float64) bool {
	if ev.Room != "" && len(s.rooms) > 0 && !slices.Contains(s.rooms, ev.Room) {
		return false
	}
	if !matchAny(s.types, ev.Type) {
		return false
	}
	if VisitorType(ev.Type) {
		return s.sample > 0 && (s.sample >= p || rand.Float64()*p < s.sample)
	}
	return true
}

// send hands it over, or cuts the subscriber off when its buffer is full.
func (s *subscriber) send(b *Bus, it *streamItem) {
	select {
	case <-s.gone:
		return
	default:
	}
	select {
	case s.ch <- it:
	default:
		s.cut.Store(true)
		b.streamDropped.Add(1)
		b.log.Warn("event stream subscriber cut off: it fell behind", "buffer", cap(s.ch))
		b.unsubscribe(s)
	}
}

func (s *subscriber) end() { s.once.Do(func() { close(s.gone) }) }

// subscribe adds a subscriber, or says why not.
func (b *Bus) subscribe(s *subscriber) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.noStreams {
		return fmt.Errorf("usher is stopping")
	}
	if len(b.subs) >= MaxSubscribers {
		return fmt.Errorf("already %d streams open, the most there may be", MaxSubscribers)
	}
	b.subs[s] = struct{}{}
	b.refresh()
	return nil
}

func (b *Bus) unsubscribe(s *subscriber) {
	s.end()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.subs[s]; ok {
		delete(b.subs, s)
		b.refresh()
	}
}

// StreamError is a stream request the handler refuses: its status, the
// query parameter at fault (if any) and why.
type StreamError struct {
	Status  int
	Param   string
	Message string
}

func (e *StreamError) Error() string { return e.Message }

// StreamHandler returns GET /api/v1/stream's handler: the events as
// server-sent events ("id:", "event:" and "data:" lines), a comment line
// every heartbeat while idle. Query parameters, each optional: room
// (comma-separated room ids; events about the node come whatever the
// filter), types (comma-separated types or families such as
// "queueing.*"; default every room event), sample (0 to 1, the share of
// visitor events; required when types names visitor events). known
// reports whether a room exists (nil: any id is accepted). Authorisation
// is the caller's (the admin handler's bearer token). fail writes a
// refusal (the admin API's JSON errors).
func (b *Bus) StreamHandler(known func(room string) bool, fail func(w http.ResponseWriter, e *StreamError)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sub, serr := parseStream(r, known)
		if serr != nil {
			fail(w, serr)
			return
		}
		rc := http.NewResponseController(w)
		sub.ch = make(chan *streamItem, b.streamCapacity)
		sub.gone = make(chan struct{})
		if err := b.subscribe(sub); err != nil {
			fail(w, &StreamError{Status: http.StatusServiceUnavailable, Message: err.Error()})
			return
		}
		defer b.unsubscribe(sub)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		write := func(s string) bool {
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			if _, err := fmt.Fprint(w, s); err != nil {
				return false
			}
			return rc.Flush() == nil
		}
		if !write(": usher event stream\nretry: 3000\n\n") {
			return
		}
		beat := time.NewTicker(b.opts.Heartbeat)
		defer beat.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-sub.gone:
				// Cut off for falling behind: say so, if the client still
				// reads at all.
				if sub.cut.Load() {
					write("event: dropped\ndata: {\"reason\":\"the client fell behind\"}\n\n")
				}
				return
			case <-b.ctx.Done():
				return
			case <-beat.C:
				if !write(": heartbeat\n\n") {
					return
				}
			case it := <-sub.ch:
				if !write("id: " + it.id + "\nevent: " + it.typ + "\ndata: " + string(it.body) + "\n\n") {
					return
				}
			}
		}
	})
}

// parseStream reads a stream request's filters.
func parseStream(r *http.Request, known func(string) bool) (*subscriber, *StreamError) {
	q := r.URL.Query()
	bad := func(param, format string, args ...any) *StreamError {
		return &StreamError{Status: http.StatusBadRequest, Param: param, Message: param + ": " + fmt.Sprintf(format, args...)}
	}
	for k := range q {
		switch k {
		case "room", "types", "sample":
		default:
			return nil, bad(k, "unknown parameter (room, types and sample are known; the token goes in the Authorization header, never the URL)")
		}
	}
	s := &subscriber{}
	for _, id := range list(q["room"]) {
		if known != nil && !known(id) {
			return nil, &StreamError{Status: http.StatusNotFound, Param: "room", Message: fmt.Sprintf("room: no room %q", id)}
		}
		s.rooms = append(s.rooms, id)
	}
	for _, t := range list(q["types"]) {
		if !ValidPattern(t) {
			return nil, bad("types", "unknown event type %q (known: %s; a family as queueing.*)", t, strings.Join(types, ", "))
		}
		s.types = append(s.types, t)
	}
	if v := q.Get("sample"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0 && f <= 1) {
			return nil, bad("sample", "must be a number from 0 to 1, got %q", v)
		}
		s.sample = f
	}
	visitors := slices.ContainsFunc(s.types, func(p string) bool {
		return slices.ContainsFunc(types, func(t string) bool { return VisitorType(t) && matchAny([]string{p}, t) })
	})
	if visitors && s.sample == 0 {
		return nil, bad("sample", "required above 0 when types names visitor events (they are sampled: at a million waiters they are a firehose)")
	}
	return s, nil
}

// list splits comma-separated values, dropping empty ones.
func list(vals []string) []string {
	var out []string
	for _, v := range vals {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// MarshalEvent encodes ev as the stream and webhooks send it.
func MarshalEvent(ev Event) ([]byte, error) { return json.Marshal(ev) }
