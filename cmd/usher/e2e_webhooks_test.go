package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/notify"
)

// webhookE2EConfig is TestE2EWebhooks' usher: one room with a webhook to
// the test's receiver, and a read token for the stream.
const webhookE2EConfig = `listen: %s
admin:
  listen: %s
  token: e2e-write
  tokens:
    - {name: watcher, token: e2e-read, role: read}
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    total_active_users: 100
    new_users_per_minute: 100
    webhooks:
      - name: ops
        url: %s
        secret: %s
        events: [queueing.*, room.settings_changed]
        timeout: 2s
`

const webhookE2ESecret = "e2e-webhook-secret-0123456789"

// delivery is one request the receiver got.
type delivery struct {
	header http.Header
	body   []byte
	event  notify.Event
	raw    map[string]any
	sigErr error
}

// receiver is a real HTTP webhook receiver that verifies signatures and
// answers 500 to its first failFirst requests.
type receiver struct {
	mu        sync.Mutex
	got       []delivery
	failFirst int
	seen      int
	srv       *httptest.Server
}

func newReceiver(t *testing.T, failFirst int) *receiver {
	rc := &receiver{failFirst: failFirst}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		d := delivery{header: r.Header.Clone(), body: body}
		d.sigErr = notify.Verify([]byte(webhookE2ESecret), r.Header.Get(notify.HeaderSignature), body, time.Now(), 5*time.Minute)
		_ = json.Unmarshal(body, &d.event)
		_ = json.Unmarshal(body, &d.raw)
		rc.mu.Lock()
		rc.seen++
		fail := rc.seen <= rc.failFirst
		rc.got = append(rc.got, d)
		rc.mu.Unlock()
		if fail {
			http.Error(w, "not now", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// wait returns the deliveries once pred holds for them, or fails after d.
func (rc *receiver) wait(t *testing.T, d time.Duration, what string, pred func([]delivery) bool) []delivery {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		rc.mu.Lock()
		got := append([]delivery(nil), rc.got...)
		rc.mu.Unlock()
		if pred(got) {
			return got
		}
		if time.Now().After(deadline) {
			var types []string
			for _, g := range got {
				types = append(types, g.event.Type)
			}
			t.Fatalf("%s: not within %s; the receiver got %d requests: %v", what, d, len(got), types)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func ofType(ds []delivery, typ string) []delivery {
	var out []delivery
	for _, d := range ds {
		if d.event.Type == typ {
			out = append(out, d)
		}
	}
	return out
}

// sseEvent is one event read from the stream.
type sseEvent struct{ id, typ, data string }

// openStream opens GET /api/v1/stream with token and returns its events
// as they come.
func openStream(t *testing.T, adm, token, query string) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+adm+"/api/v1/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		cancel()
		t.Fatalf("stream: %s %s: %s", resp.Status, resp.Header.Get("Content-Type"), b)
	}
	out := make(chan sseEvent, 64)
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.typ != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				ev.typ = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				ev.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out
}

// TestE2EWebhooks runs the binary with a webhook to a real HTTP receiver
// that refuses the first delivery (500): switching queue_all on through
// the admin API brings a signed room.settings_changed carrying the audit
// entry and a queueing.started, retried after the failure, to the
// receiver and onto the admin event stream; switching it off brings
// queueing.stopped. The metrics count the deliveries and the retry.
func TestE2EWebhooks(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rc := newReceiver(t, 1)
	origin := httptest.NewServer(bench.NewOrigin("webhook shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	pub, adm := freeAddr(t), freeAddr(t)
	path := filepath.Join(dir, "usher.yaml")
	body := fmt.Sprintf(webhookE2EConfig, pub, adm, filepath.Join(dir, "data"), origin.URL, rc.srv.URL+"/hooks/usher", webhookE2ESecret)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")

	// The stream: a read token in the header, never in the URL.
	for _, tc := range []struct {
		query, token string
		status       int
	}{
		{"", "", http.StatusUnauthorized},
		{"?token=e2e-read", "", http.StatusUnauthorized},
		{"?token=e2e-read", "e2e-read", http.StatusBadRequest},
		{"?types=room.exploded", "e2e-read", http.StatusBadRequest},
		{"?room=nosuch", "e2e-read", http.StatusNotFound},
		{"?types=visitor.admitted", "e2e-read", http.StatusBadRequest},
	} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+adm+"/api/v1/stream"+tc.query, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("stream%s with token %q: %d %s, want %d", tc.query, tc.token, resp.StatusCode, b, tc.status)
		}
	}
	stream := openStream(t, adm, "e2e-read", "?room=sale&types=queueing.*,room.settings_changed")

	c := admin.NewClient(adm, "e2e-write")
	patch := func(on bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := c.Room(ctx, "sale")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"queue_all": on}); err != nil {
			t.Fatalf("queue_all %v: %v", on, err)
		}
	}
	at := time.Now()
	patch(true)
	got := rc.wait(t, 15*time.Second, "room.settings_changed and queueing.started delivered", func(ds []delivery) bool {
		return len(ofType(ds, notify.SettingsChanged)) >= 2 && len(ofType(ds, notify.QueueingStarted)) >= 1 ||
			len(ofType(ds, notify.SettingsChanged)) >= 1 && len(ofType(ds, notify.QueueingStarted)) >= 2
	})
	t.Logf("first deliveries within %s", time.Since(at).Round(time.Millisecond))
	for i, d := range got {
		if d.sigErr != nil {
			t.Errorf("delivery %d (%s): signature: %v", i, d.event.Type, d.sigErr)
		}
		if d.header.Get(notify.HeaderEvent) != d.event.Type || d.header.Get(notify.HeaderDelivery) != d.event.ID || d.event.ID == "" {
			t.Errorf("delivery %d: headers %s=%q %s=%q, body type %q id %q", i, notify.HeaderEvent, d.header.Get(notify.HeaderEvent),
				notify.HeaderDelivery, d.header.Get(notify.HeaderDelivery), d.event.Type, d.event.ID)
		}
		if d.event.Room != "sale" || d.header.Get("Content-Type") != "application/json" {
			t.Errorf("delivery %d: room %q, content type %q", i, d.event.Room, d.header.Get("Content-Type"))
		}
		if strings.Contains(string(d.body), webhookE2ESecret) {
			t.Errorf("delivery %d carries the secret", i)
		}
	}
	// The first request failed (500) and was tried again: same delivery
	// id, attempt 2.
	first := got[0]
	retried := false
	for _, d := range got[1:] {
		if d.event.ID == first.event.ID && d.header.Get(notify.HeaderAttempt) == "2" {
			retried = true
		}
	}
	if first.header.Get(notify.HeaderAttempt) != "1" || !retried {
		t.Errorf("the refused first delivery (%s, attempt %s) was not retried with its id as attempt 2", first.event.Type, first.header.Get(notify.HeaderAttempt))
	}
	sc := ofType(got, notify.SettingsChanged)[0].raw
	data, _ := sc["data"].(map[string]any)
	before, _ := data["before"].(map[string]any)
	after, _ := data["after"].(map[string]any)
	if data["source"] != "api" || data["token"] != "admin" || data["action"] != "room.update" ||
		before["queue_all"] != false || after["queue_all"] != true {
		t.Errorf("room.settings_changed data = %v, want the audit entry: api, token admin, room.update, queue_all false → true", data)
	}
	qs := ofType(got, notify.QueueingStarted)[0].raw
	if d, _ := qs["data"].(map[string]any); d["reason"] != "queue_all" {
		t.Errorf("queueing.started data = %v, want reason queue_all", qs["data"])
	}

	// The same events on the stream.
	want := map[string]bool{notify.SettingsChanged: false, notify.QueueingStarted: false}
	timeout := time.After(10 * time.Second)
	for !want[notify.SettingsChanged] || !want[notify.QueueingStarted] {
		select {
		case ev, ok := <-stream:
			if !ok {
				t.Fatal("the stream ended")
			}
			var e notify.Event
			if err := json.Unmarshal([]byte(ev.data), &e); err != nil || e.ID != ev.id || e.Type != ev.typ || e.Room != "sale" {
				t.Errorf("stream event id %q event %q data %s: %v", ev.id, ev.typ, ev.data, err)
			}
			want[ev.typ] = true
		case <-timeout:
			t.Fatalf("stream: got %v within 10 s", want)
		}
	}

	patch(false)
	rc.wait(t, 15*time.Second, "queueing.stopped delivered", func(ds []delivery) bool {
		return len(ofType(ds, notify.QueueingStopped)) >= 1
	})

	// The metrics count what happened.
	req, _ := http.NewRequest(http.MethodGet, "http://"+adm+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer e2e-read")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{
		`usher_webhook_retries_total{room="sale",webhook="ops"} 1`,
		`usher_webhook_dropped_total{room="sale",webhook="ops"} 0`,
		`usher_webhook_queue_length{room="sale",webhook="ops"}`,
		`usher_webhook_delivery_seconds_count{room="sale",webhook="ops"}`,
		`usher_stream_subscribers 1`,
	} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("metrics lack %s", m)
		}
	}
	if !strings.Contains(string(metrics), `usher_webhook_deliveries_total{result="delivered",room="sale",webhook="ops"}`) &&
		!strings.Contains(string(metrics), `usher_webhook_deliveries_total{room="sale",result="delivered",webhook="ops"}`) {
		t.Errorf("metrics lack the delivered count:\n%s", grepLines(string(metrics), "usher_webhook"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.Contains(line, sub) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
