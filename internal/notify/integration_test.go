package notify

import (
	"bufio"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// realReceiver is a real HTTP receiver: it verifies each request's
// signature and misbehaves on the attempts plan names.
type realReceiver struct {
	t     *testing.T
	mu    sync.Mutex
	plan  map[int]string // request number (from 1) -> "500", "hang", "reset"
	n     int
	ok    []Event
	tries map[string][]string // delivery id -> attempt headers seen
	bad   int
	srv   *httptest.Server
}

func newRealReceiver(t *testing.T, plan map[int]string) *realReceiver {
	rr := &realReceiver{t: t, plan: plan, tries: map[string][]string{}}
	rr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rr.mu.Lock()
		rr.n++
		what := rr.plan[rr.n]
		id := r.Header.Get(HeaderDelivery)
		rr.tries[id] = append(rr.tries[id], r.Header.Get(HeaderAttempt))
		if err := Verify(testSecret, r.Header.Get(HeaderSignature), body, time.Now(), time.Minute); err != nil {
			rr.bad++
		}
		rr.mu.Unlock()
		switch what {
		case "500":
			http.Error(w, "busy", http.StatusInternalServerError)
			return
		case "hang":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		case "reset":
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		var e Event
		_ = json.Unmarshal(body, &e)
		rr.mu.Lock()
		rr.ok = append(rr.ok, e)
		rr.mu.Unlock()
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(strings.Repeat("x", 1<<20))) // a large answer, read only in part
	}))
	t.Cleanup(rr.srv.Close)
	return rr
}

func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWebhookRealReceiver: against a real HTTP server that answers 500,
// then never answers (timeout), then resets the connection, each event is
// retried with its delivery id until delivered, every request signed.
func TestWebhookRealReceiver(t *testing.T) {
	rr := newRealReceiver(t, map[int]string{1: "500", 2: "hang", 3: "reset", 5: "500"})
	b := New(Options{Backoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	defer b.Close()
	c := hook("ops", 10)
	c.URL, c.Timeout = rr.srv.URL+"/hook?k=v", 300*time.Millisecond
	b.SetWebhooks([]WebhookConfig{c})
	b.Publish(Event{ID: "first", Type: QueueingStarted, Room: "sale", Data: map[string]any{"reason": "waiters"}})
	b.Publish(Event{ID: "second", Type: QueueingStopped, Room: "sale"})
	b.Publish(Event{ID: "other-room", Type: QueueingStopped, Room: "drop"})
	waitFor(t, 10*time.Second, "both delivered", func() bool {
		rr.mu.Lock()
		defer rr.mu.Unlock()
		return len(rr.ok) == 2
	})
	waitFor(t, 5*time.Second, "both counted", func() bool { return b.Stats()[0].Delivered == 2 })
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.ok[0].ID != "first" || rr.ok[1].ID != "second" || rr.ok[0].Type != QueueingStarted || rr.ok[0].Room != "sale" {
		t.Errorf("delivered %+v", rr.ok)
	}
	if got := strings.Join(rr.tries["first"], ","); got != "1,2,3,4" {
		t.Errorf("attempts of the first = %s, want 1,2,3,4 (500, timeout, reset, delivered)", got)
	}
	if got := strings.Join(rr.tries["second"], ","); got != "1,2" {
		t.Errorf("attempts of the second = %s, want 1,2", got)
	}
	if rr.bad != 0 || len(rr.tries["other-room"]) != 0 {
		t.Errorf("%d requests badly signed; the other room's event sent %d times", rr.bad, len(rr.tries["other-room"]))
	}
	if s := b.Stats()[0]; s.Delivered != 2 || s.Retries != 4 || s.Failed != 0 || s.Dropped != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestWebhookForbiddenAddress: a webhook aimed at the cloud metadata
// address (as a write token could aim one, past the config check, or as
// a DNS name could turn into one) is refused before any packet is sent,
// once, and not tried again; a receiver on loopback still gets its events.
func TestWebhookForbiddenAddress(t *testing.T) {
	var logs syncBuffer
	b := New(Options{MaxAttempts: 3, Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer b.Close()
	rr := newRealReceiver(t, nil)
	meta, v6, ok := hook("meta", 5), hook("meta6", 5), hook("ok", 5)
	meta.URL, v6.URL, ok.URL = "http://169.254.169.254/latest/meta-data/", "http://[fe80::1%25lo]:80/", rr.srv.URL
	b.SetWebhooks([]WebhookConfig{meta, v6, ok})
	b.Publish(Event{ID: "e1", Type: QueueingStarted, Room: "sale"})
	waitFor(t, 5*time.Second, "refused and delivered", func() bool {
		var n int64
		for _, s := range b.Stats() {
			n += s.Refused + s.Delivered
		}
		return n == 3
	})
	for _, s := range b.Stats() {
		want := WebhookStats{Room: "sale", Name: s.Name, Refused: 1}
		if s.Name == "ok" {
			want = WebhookStats{Room: "sale", Name: "ok", Delivered: 1}
		}
		if s != want {
			t.Errorf("stats %+v, want %+v", s, want)
		}
	}
	for _, msg := range []string{"refused to connect to 169.254.169.254: a link-local address", "refused to connect to fe80::1%lo: a link-local address"} {
		if !strings.Contains(logs.String(), msg) {
			t.Errorf("log lacks %q:\n%s", msg, logs.String())
		}
	}
}

// TestWebhookReceiverDown: with the receiver down (connections refused),
// events are tried a bounded number of times and given up; beyond
// max_queue they are dropped and counted, and publishing never waits.
func TestWebhookReceiverDown(t *testing.T) {
	rr := newRealReceiver(t, nil)
	url := rr.srv.URL
	rr.srv.Close()
	b := New(Options{MaxAttempts: 3, Backoff: 20 * time.Millisecond, MaxBackoff: 40 * time.Millisecond})
	defer b.Close()
	c := hook("ops", 5)
	c.URL = url
	b.SetWebhooks([]WebhookConfig{c})
	start := time.Now()
	for range 50 {
		b.Publish(Event{Type: SummaryMinute, Room: "sale"})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("publishing 50 events took %s", d)
	}
	waitFor(t, 10*time.Second, "every event given up or dropped", func() bool {
		s := b.Stats()[0]
		return s.Failed+s.Dropped == 50
	})
	s := b.Stats()[0]
	if s.Dropped < 44 || s.Failed < 1 || s.Failed > 6 || s.Delivered != 0 || s.Retries != 2*s.Failed {
		t.Errorf("stats %+v: want at most 6 tried (one in flight and 5 queued), each 3 times, the rest dropped", s)
	}
}

// TestStreamHTTP reads the stream over real HTTP: filters, the SSE
// framing, heartbeats, and bad parameters refused naming them.
func TestStreamHTTP(t *testing.T) {
	b := New(Options{Heartbeat: 50 * time.Millisecond})
	defer b.Close()
	fail := func(w http.ResponseWriter, e *StreamError) {
		w.WriteHeader(e.Status)
		_, _ = w.Write([]byte(e.Param + ": " + e.Message))
	}
	srv := httptest.NewServer(b.StreamHandler(func(r string) bool { return r == "sale" || r == "drop" }, fail))
	defer srv.Close()
	for q, want := range map[string]string{
		"?types=nope":               "400 types",
		"?sample=2&types=visitor.*": "400 sample",
		"?types=visitor.*":          "400 sample",
		"?room=gone":                "404 room",
		"?token=abc":                "400 token",
	} {
		resp, err := http.Get(srv.URL + q)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := resp.Status[:3] + " " + strings.SplitN(string(body), ":", 2)[0]; got != want {
			t.Errorf("%s: %s %s, want %s", q, resp.Status, body, want)
		}
	}
	resp, err := http.Get(srv.URL + "?room=sale&types=queueing.*,breaker.opened")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	waitFor(t, 5*time.Second, "subscribed", func() bool { n, _ := b.StreamStats(); return n == 1 })
	b.Publish(Event{ID: "a", Type: SummaryMinute, Room: "sale"})   // not a wanted type
	b.Publish(Event{ID: "b", Type: QueueingStarted, Room: "drop"}) // another room
	b.Publish(Event{ID: "c", Type: QueueingStarted, Room: "sale"}) // wanted
	b.Publish(Event{ID: "d", Type: BreakerOpened})                 // the node's: every room
	time.Sleep(120 * time.Millisecond)                             // a heartbeat or two
	b.Publish(Event{ID: "e", Type: QueueingStopped, Room: "sale"})
	sc := bufio.NewScanner(resp.Body)
	var ids []string
	heartbeats := 0
	for sc.Scan() && len(ids) < 3 {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		case line == ": heartbeat":
			heartbeats++
		case strings.HasPrefix(line, "event: "), strings.HasPrefix(line, "data: {"), line == "", strings.HasPrefix(line, ": usher"), strings.HasPrefix(line, "retry: "):
		default:
			t.Errorf("unexpected line %q", line)
		}
	}
	if strings.Join(ids, ",") != "c,d,e" || heartbeats == 0 {
		t.Errorf("ids %v, %d heartbeats; want c,d,e and at least one heartbeat", ids, heartbeats)
	}
}

// blockingWriter is a ResponseWriter whose writes wait for release after
// the first (the stream's opening lines): a client that stopped reading.
type blockingWriter struct {
	mu      sync.Mutex
	h       http.Header
	out     strings.Builder
	writes  int
	release chan struct{}
}

func (w *blockingWriter) Header() http.Header { return w.h }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	w.writes++
	first := w.writes == 1
	w.mu.Unlock()
	if !first {
		<-w.release
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.Write(p)
}

// TestStreamCutOff: a subscriber that stops reading is cut off once its
// buffer is full, told so with event: dropped, and publishing never
// waits for it.
func TestStreamCutOff(t *testing.T) {
	b := New(Options{Logger: discard()})
	defer b.Close()
	b.streamCapacity = 4
	h := b.StreamHandler(nil, func(w http.ResponseWriter, e *StreamError) { t.Errorf("refused: %v", e) })
	w := &blockingWriter{h: http.Header{}, release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/stream", nil))
		close(done)
	}()
	waitFor(t, 5*time.Second, "subscribed", func() bool { n, _ := b.StreamStats(); return n == 1 })
	start := time.Now()
	for range 20 {
		b.Publish(Event{Type: SummaryMinute, Room: "sale"})
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("publishing to a stuck subscriber took %s", d)
	}
	if n, dropped := b.StreamStats(); n != 0 || dropped != 1 {
		t.Fatalf("stream stats: %d subscribers, %d dropped; want 0 and 1", n, dropped)
	}
	close(w.release)
	<-done
	w.mu.Lock()
	defer w.mu.Unlock()
	if !strings.HasSuffix(w.out.String(), "event: dropped\ndata: {\"reason\":\"the client fell behind\"}\n\n") {
		t.Errorf("the stream ends %q, want event: dropped", w.out.String()[max(0, w.out.Len()-120):])
	}
}
