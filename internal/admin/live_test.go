package admin

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/usherhq/usher"
)

// readEvent reads one server-sent event (its name and data) from r,
// skipping comments.
func readEvent(r *bufio.Reader) (name, data string, err error) {
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return name, data, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if name != "" || data != "" {
				return name, data, nil
			}
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry:"):
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// TestLiveAuth: the stream needs a token in the Authorization header (a
// token in the URL is not one); a read token gets snapshots of every room, with the limits in force and the next event; a client
// that goes away is unsubscribed.
func TestLiveAuth(t *testing.T) {
	a := newAPITest(t, nil, "")
	srv := httptest.NewServer(a.h)
	defer srv.Close()

	for name, setup := range map[string]func(*http.Request){
		"no token":       func(*http.Request) {},
		"wrong token":    func(r *http.Request) { r.Header.Set("Authorization", "Bearer nope") },
		"token in query": func(r *http.Request) { r.URL.RawQuery = "token=" + readToken + "&access_token=" + readToken },
		"basic scheme":   func(r *http.Request) { r.Header.Set("Authorization", "Basic "+readToken) },
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", srv.URL+"/api/v1/live", nil)
			setup(req)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != "Bearer" {
				t.Fatalf("status %d, WWW-Authenticate %q; want 401 Bearer", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	if n := a.h.live.count(); n != 0 {
		t.Fatalf("%d subscribers after refused requests", n)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/v1/live", nil)
	req.Header.Set("Authorization", "Bearer "+readToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	var times []time.Time
	start := time.Now()
	for len(times) < 3 {
		name, data, err := readEvent(br)
		if err != nil {
			t.Fatal(err)
		}
		if name != "snapshot" {
			t.Fatalf("event %q, want snapshot", name)
		}
		var snap LiveSnapshot
		if err := json.Unmarshal([]byte(data), &snap); err != nil {
			t.Fatalf("snapshot %s: %v", data, err)
		}
		if len(snap.Rooms) != 2 || snap.Rooms[0].ID != "sale" || snap.Rooms[1].ID != "other" {
			t.Fatalf("rooms %+v", snap.Rooms)
		}
		s := snap.Rooms[0]
		if s.Active != 3 || s.Waiting != 4 || s.AdmittedLastMinute != 5 || s.Slots != 6 ||
			s.TotalActiveUsers != 200 || s.NewUsersPerMinute != 300 || s.Phase != "none" || s.Event != nil ||
			s.NextEvent == nil || s.NextEvent.Name != "drop" || !s.NextEvent.Start.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) ||
			s.QueueingMethod != "fifo" || s.Name != "Big Sale" || s.Error != "" {
			t.Fatalf("sale: %+v", s)
		}
		if o := snap.Rooms[1]; o.TotalActiveUsers != 10 || o.NextEvent != nil {
			t.Fatalf("other: %+v", o)
		}
		times = append(times, time.Now())
	}
	// (Their timing is TestLiveSlowClientDropped's, on simulated time.)
	t.Logf("snapshots after %v, %v, %v", times[0].Sub(start), times[1].Sub(start), times[2].Sub(start))
	if n := a.h.live.count(); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	resp.Body.Close()
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for a.h.live.count() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the subscriber of a closed connection is still there")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// streamWriter is a ResponseWriter for the stream's tests: it records
// what is written and, while gate is not nil, blocks each write until the
// gate is closed (a client that does not read).
type streamWriter struct {
	hdr  http.Header
	gate chan struct{}

	mu     sync.Mutex
	buf    strings.Builder
	status int
}

func (w *streamWriter) Header() http.Header { return w.hdr }
func (w *streamWriter) WriteHeader(s int) {
	w.mu.Lock()
	w.status = s
	w.mu.Unlock()
}
func (w *streamWriter) Write(b []byte) (int, error) {
	if w.gate != nil {
		<-w.gate
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}
func (w *streamWriter) Flush() {}
func (w *streamWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// liveHandler is a handler over fixed rooms whose status counts its calls.
func liveHandler(calls *atomic.Int64) *Handler {
	rooms := []*usher.Room{{ID: "a", Settings: usher.Settings{TotalActiveUsers: 5, NewUsersPerMinute: 7}}, {ID: "b"}}
	status := func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) {
		calls.Add(1)
		return usher.RoomStats{Active: 1}, nil
	}
	return New(Options{
		Token:   writeToken,
		Rooms:   func() []*usher.Room { return rooms },
		Logger:  slog.New(slog.DiscardHandler),
		Status:  status,
		Metrics: NewMetrics(func() []*usher.Room { return nil }, nil),
	})
}

func liveRequest(ctx context.Context) *http.Request {
	req := httptest.NewRequestWithContext(ctx, "GET", "/api/v1/live", nil)
	req.Header.Set("Authorization", "Bearer "+writeToken)
	return req
}

// TestLiveSlowClientDropped: the first snapshot comes at once, the next a
// second later; a client that does not read is dropped once
// liveBuffer snapshots wait for it, and its stream ends with a "dropped"
// event; a client that reads keeps its stream; the rooms are read once a
// tick whatever the subscribers; the hub stops when nobody listens.
func TestLiveSlowClientDropped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		h := liveHandler(&calls)

		slow := &streamWriter{hdr: http.Header{}, gate: make(chan struct{})}
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(slow, liveRequest(context.Background()))
		}()
		fast, err := h.live.subscribe()
		if err != nil {
			t.Fatal(err)
		}
		var got atomic.Int64
		go func() {
			for range fast.ch {
				got.Add(1)
			}
		}()
		synctest.Wait()
		if n := got.Load(); n != 1 {
			t.Fatalf("%d snapshots at once, want the first", n)
		}
		time.Sleep(liveInterval)
		synctest.Wait()
		if n := got.Load(); n != 2 {
			t.Fatalf("%d snapshots after %v, want 2", n, liveInterval)
		}

		ticks := liveBuffer + 3
		time.Sleep(time.Duration(ticks-1)*liveInterval + liveInterval/2)
		synctest.Wait()
		if n := h.live.count(); n != 1 {
			t.Fatalf("%d subscribers after %d ticks; want the slow one dropped, the fast one kept", n, ticks)
		}
		if n := got.Load(); n < int64(ticks) {
			t.Fatalf("the reading subscriber got %d snapshots in %d ticks", n, ticks)
		}
		// Two rooms, read once per snapshot, not once per subscriber.
		if c := calls.Load(); c != 2*int64(ticks+1) {
			t.Fatalf("%d status calls for %d snapshots of 2 rooms", c, ticks+1)
		}
		if got := liveMetrics(t, h); got != "usher_live_dropped_total 1 usher_live_subscribers 1" {
			t.Fatalf("metrics: %s", got)
		}
		close(slow.gate) // the client reads again: its stream ends
		<-done
		if out := slow.String(); !strings.HasSuffix(out, "event: dropped\ndata: {\"reason\":\"the client fell behind\"}\n\n") {
			t.Fatalf("the slow stream ends with %q", out[max(0, len(out)-120):])
		}
		if strings.Contains(slow.String(), "event: snapshot") {
			t.Fatal("stale snapshots were sent to the dropped client")
		}

		h.live.unsubscribe(fast)
		time.Sleep(2 * liveInterval)
		synctest.Wait()
		c := calls.Load()
		time.Sleep(5 * liveInterval)
		synctest.Wait()
		if calls.Load() != c {
			t.Fatal("the rooms are still read with nobody listening")
		}
	})
}

// TestLiveBounded: at most DefaultStreamSlots streams, however many
// tokens hold them (the next gets 503), a heartbeat comment while nothing
// else is sent, and Close ends every stream and refuses new ones.
func TestLiveBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		h := liveHandler(&calls)
		// Write tokens enough to hold every slot, each its share.
		var secrets []string
		for i := range DefaultStreamSlots / DefaultStreamSlotsPerToken {
			secrets = append(secrets, fmt.Sprintf("writer-%d", i))
		}
		h.tokens = nil
		for i, s := range secrets {
			h.tokens = append(h.tokens, tokenHash{sha256.Sum256([]byte(s)), fmt.Sprintf("w%d", i), true})
		}
		request := func(i int) *http.Request {
			req := liveRequest(context.Background())
			req.Header.Set("Authorization", "Bearer "+secrets[i%len(secrets)])
			return req
		}
		h.live.interval = time.Hour // no snapshot but the first: the heartbeat alone
		var writers []*streamWriter
		var wg sync.WaitGroup
		for i := range DefaultStreamSlots {
			w := &streamWriter{hdr: http.Header{}}
			writers = append(writers, w)
			wg.Go(func() { h.ServeHTTP(w, request(i)) })
		}
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, request(0))
		if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "all 64 live streams of this node are open") {
			t.Fatalf("stream %d: %d %s", DefaultStreamSlots+1, rec.Code, rec.Body)
		}

		time.Sleep(liveHeartbeat + time.Second)
		synctest.Wait()
		for i, w := range writers {
			out := w.String()
			if strings.Count(out, "event: snapshot") != 1 || !strings.Contains(out, ": heartbeat\n\n") {
				t.Fatalf("stream %d after %v: %q", i, liveHeartbeat, out)
			}
		}

		h.Close()
		wg.Wait() // every stream ends
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, request(0))
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("a stream after Close: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestLiveRoomError: a room whose counters cannot be read is in the
// snapshot with its limits and the error, the others as usual.
func TestLiveRoomError(t *testing.T) {
	rooms := []*usher.Room{{ID: "a", Settings: usher.Settings{TotalActiveUsers: 5}}, {ID: "b"}}
	h := New(Options{
		Token:  writeToken,
		Rooms:  func() []*usher.Room { return rooms },
		Logger: slog.New(slog.DiscardHandler),
		Status: func(_ context.Context, rm *usher.Room, _ time.Time) (usher.RoomStats, error) {
			if rm.ID == "a" {
				return usher.RoomStats{}, usher.Errorf(usher.EUnavailable, "store down")
			}
			return usher.RoomStats{Waiting: 9}, nil
		},
	})
	snap := h.liveSnapshot(context.Background(), time.Now())
	if a := snap.Rooms[0]; a.Error != `status of room "a": store down` || a.TotalActiveUsers != 5 {
		t.Fatalf("room a: %+v", a)
	}
	if b := snap.Rooms[1]; b.Error != "" || b.Waiting != 9 {
		t.Fatalf("room b: %+v", b)
	}
}

// liveMetrics returns the live stream's metrics from the handler's
// /metrics, as "name value" pairs.
func liveMetrics(t *testing.T, h *Handler) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+writeToken)
	h.ServeHTTP(rec, req)
	var out []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "usher_live_") {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}
