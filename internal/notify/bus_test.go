package notify

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// roundTrip is a transport made of a function (in the test's bubble: no
// network).
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func answer(code int, header ...string) *http.Response {
	h := http.Header{}
	for i := 0; i+1 < len(header); i += 2 {
		h.Set(header[i], header[i+1])
	}
	return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader("ok"))}
}

// attempt is one request a test transport saw.
type attempt struct {
	at     time.Time
	header http.Header
	body   []byte
}

// recorder answers with next(n) for the n-th request (from 1) and keeps
// every request.
type recorder struct {
	mu   sync.Mutex
	got  []attempt
	next func(n int, r *http.Request) (*http.Response, error)
}

func (rc *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.got = append(rc.got, attempt{at: time.Now(), header: r.Header.Clone(), body: body})
	n := len(rc.got)
	rc.mu.Unlock()
	return rc.next(n, r)
}

func (rc *recorder) attempts() []attempt {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]attempt(nil), rc.got...)
}

var testSecret = []byte("0123456789abcdef-test")

func hook(name string, q int) WebhookConfig {
	return WebhookConfig{Room: "sale", Name: name, URL: "http://receiver.test/hook", Secret: testSecret, MaxQueue: q, Timeout: 5 * time.Second}
}

// TestRetryBackoff: a receiver that fails three times (500) gets the event
// four times, with the same delivery id, attempts numbered, each signed,
// after waits that double from the base with up to half taken off.
func TestRetryBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := &recorder{next: func(n int, _ *http.Request) (*http.Response, error) {
			if n <= 3 {
				return answer(500), nil
			}
			return answer(204), nil
		}}
		b := New(Options{Transport: rc, Backoff: time.Second, MaxBackoff: time.Minute})
		defer b.Close()
		b.SetWebhooks([]WebhookConfig{hook("ops", 10)})
		start := time.Now()
		b.Publish(Event{Type: QueueingStarted, Room: "sale", Data: map[string]any{"reason": "queue_all"}})
		time.Sleep(time.Minute)
		synctest.Wait()
		got := rc.attempts()
		if len(got) != 4 {
			t.Fatalf("attempts = %d, want 4", len(got))
		}
		prev := start
		for i, a := range got {
			if a.header.Get(HeaderAttempt) != strconv.Itoa(i+1) || a.header.Get(HeaderDelivery) != got[0].header.Get(HeaderDelivery) ||
				a.header.Get(HeaderEvent) != QueueingStarted {
				t.Errorf("attempt %d headers %v", i+1, a.header)
			}
			if err := Verify(testSecret, a.header.Get(HeaderSignature), a.body, a.at, time.Minute); err != nil {
				t.Errorf("attempt %d signature: %v", i+1, err)
			}
			wait := a.at.Sub(prev)
			if i > 0 {
				full := time.Second << (i - 1)
				if wait < full/2 || wait > full {
					t.Errorf("wait before attempt %d = %s, want %s to %s", i+1, wait, full/2, full)
				}
			} else if wait != 0 {
				t.Errorf("first attempt after %s, want at once", wait)
			}
			prev = a.at
		}
		if s := b.Stats()[0]; s.Delivered != 1 || s.Retries != 3 || s.Failed != 0 || s.Dropped != 0 {
			t.Errorf("stats %+v, want 1 delivered after 3 retries", s)
		}
	})
}

// TestGiveUp: attempts are bounded; the event is counted failed.
func TestGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := &recorder{next: func(int, *http.Request) (*http.Response, error) { return nil, io.ErrUnexpectedEOF }}
		var logs syncBuffer
		b := New(Options{Transport: rc, MaxAttempts: 4, Backoff: time.Second, MaxBackoff: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		defer b.Close()
		h := hook("ops", 10)
		h.URL = "http://receiver.test/hook/PATH-TOKEN?k=QUERY-TOKEN"
		b.SetWebhooks([]WebhookConfig{h})
		b.Publish(Event{Type: QueueingStarted, Room: "sale"})
		time.Sleep(time.Hour)
		synctest.Wait()
		if n := len(rc.attempts()); n != 4 {
			t.Errorf("attempts = %d, want 4", n)
		}
		if got := rc.attempts(); got[3].at.Sub(got[0].at) > 5*time.Second {
			t.Errorf("4 attempts took %s, more than the capped backoff allows", got[3].at.Sub(got[0].at))
		}
		if s := b.Stats()[0]; s.Failed != 1 || s.Delivered != 0 || s.Retries != 3 {
			t.Errorf("stats %+v, want 1 failed after 3 retries", s)
		}
		// The log says why, with the URL as scheme and host: its path
		// and query may carry a token.
		if l := logs.String(); !strings.Contains(l, "given up") || !strings.Contains(l, `reason="Post http://receiver.test/…: unexpected EOF"`) ||
			strings.Contains(l, "PATH-TOKEN") || strings.Contains(l, "QUERY-TOKEN") {
			t.Errorf("log:\n%s", l)
		}
	})
}

// syncBuffer is a buffer safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRefusedAndRetryAfter: a 4xx is not retried, a redirect is neither
// followed nor retried, and a 429's Retry-After is honoured.
func TestRefusedAndRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name     string
		first    *http.Response
		attempts int
		minWait  time.Duration
		refused  int64
	}{
		{"400", answer(400), 1, 0, 1},
		{"redirect", answer(302, "Location", "http://elsewhere.test/"), 1, 0, 1},
		{"429", answer(429, "Retry-After", "7"), 2, 7 * time.Second, 0},
		{"503 date", answer(503, "Retry-After", time.Date(2000, 1, 1, 0, 0, 30, 0, time.UTC).Format(http.TimeFormat)), 2, 30 * time.Second, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rc := &recorder{next: func(n int, r *http.Request) (*http.Response, error) {
					if n == 1 {
						return tc.first, nil
					}
					if r.URL.Host != "receiver.test" {
						t.Errorf("request to %s", r.URL)
					}
					return answer(200), nil
				}}
				b := New(Options{Transport: rc})
				defer b.Close()
				b.SetWebhooks([]WebhookConfig{hook("ops", 10)})
				b.Publish(Event{Type: SummaryMinute, Room: "sale"})
				time.Sleep(time.Hour)
				synctest.Wait()
				got := rc.attempts()
				if len(got) != tc.attempts {
					t.Fatalf("attempts = %d, want %d", len(got), tc.attempts)
				}
				if tc.attempts == 2 && got[1].at.Sub(got[0].at) < tc.minWait {
					t.Errorf("retry after %s, want at least %s", got[1].at.Sub(got[0].at), tc.minWait)
				}
				if s := b.Stats()[0]; s.Refused != tc.refused {
					t.Errorf("stats %+v, want %d refused", s, tc.refused)
				}
			})
		})
	}
}

// TestTimeout: an attempt that gets no answer within the webhook's
// timeout is cut and retried.
func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := &recorder{next: func(n int, r *http.Request) (*http.Response, error) {
			if n == 1 {
				<-r.Context().Done()
				return nil, r.Context().Err()
			}
			return answer(200), nil
		}}
		b := New(Options{Transport: rc})
		defer b.Close()
		c := hook("ops", 10)
		c.Timeout = 2 * time.Second
		b.SetWebhooks([]WebhookConfig{c})
		b.Publish(Event{Type: SummaryMinute, Room: "sale"})
		time.Sleep(time.Minute)
		synctest.Wait()
		got := rc.attempts()
		if len(got) != 2 || got[1].at.Sub(got[0].at) < 2*time.Second {
			t.Fatalf("attempts %d, the second after %s; want 2, after the 2s timeout", len(got), got[len(got)-1].at.Sub(got[0].at))
		}
		if s := b.Stats()[0]; s.Delivered != 1 {
			t.Errorf("stats %+v", s)
		}
	})
}

// TestDropWhenFull: while the receiver hangs, the queue holds max_queue
// events and drops the rest, counted; Publish never blocks. Once the
// receiver answers, the queued events are delivered in order.
func TestDropWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		rc := &recorder{next: func(n int, r *http.Request) (*http.Response, error) {
			<-release
			return answer(200), nil
		}}
		b := New(Options{Transport: rc})
		defer b.Close()
		b.SetWebhooks([]WebhookConfig{hook("ops", 3)})
		for i := range 10 {
			b.Publish(Event{ID: "e" + strconv.Itoa(i), Type: SummaryMinute, Room: "sale"})
			synctest.Wait() // the worker takes the first at once
		}
		if s := b.Stats()[0]; s.Dropped != 6 || s.Queued != 3 {
			t.Fatalf("stats %+v, want 6 dropped and 3 queued (one in flight)", s)
		}
		close(release)
		synctest.Wait()
		var ids []string
		for _, a := range rc.attempts() {
			ids = append(ids, a.header.Get(HeaderDelivery))
		}
		if strings.Join(ids, ",") != "e0,e1,e2,e3" {
			t.Errorf("delivered %v, want e0 to e3 in order", ids)
		}
		if s := b.Stats()[0]; s.Delivered != 4 || s.Dropped != 6 || s.Queued != 0 {
			t.Errorf("stats %+v", s)
		}
	})
}

// TestSetWebhooks: a reload with the same webhook keeps its queue and
// counts; a new max_queue starts a new queue; a webhook that is gone
// stops, its queued events counted as dropped.
func TestSetWebhooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		rc := &recorder{next: func(int, *http.Request) (*http.Response, error) { <-release; return answer(200), nil }}
		b := New(Options{Transport: rc})
		defer b.Close()
		b.SetWebhooks([]WebhookConfig{hook("ops", 5), hook("old", 5)})
		for range 3 {
			b.Publish(Event{Type: SummaryMinute, Room: "sale"})
			synctest.Wait()
		}
		ops := hook("ops", 5)
		ops.Events = []string{"summary.*"}
		b.SetWebhooks([]WebhookConfig{ops})
		stats := b.Stats()
		if len(stats) != 1 || stats[0].Name != "ops" || stats[0].Queued != 2 {
			t.Fatalf("after a reload keeping ops: %+v", stats)
		}
		close(release)
		synctest.Wait()
		if s := b.Stats()[0]; s.Delivered != 3 {
			t.Errorf("ops after the reload: %+v, want its 3 events delivered", s)
		}
	})
}

// TestVisitorSampling: without a consumer of visitor events, asking costs
// no allocation and says no; each webhook gets its own share.
func TestVisitorSampling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := &recorder{next: func(int, *http.Request) (*http.Response, error) { return answer(200), nil }}
		b := New(Options{Transport: rc})
		defer b.Close()
		b.SetWebhooks([]WebhookConfig{hook("rooms", 10)})
		if b.WantsVisitors() || b.SampleVisitor("sale") {
			t.Fatal("visitor events wanted while no webhook asks for them")
		}
		if n := testing.AllocsPerRun(1000, func() { _ = b.WantsVisitors() || b.SampleVisitor("sale") }); n != 0 {
			t.Errorf("asking allocates %v times", n)
		}
		tenth, half := hook("tenth", 100_000), hook("half", 100_000)
		tenth.Events, tenth.VisitorSample = []string{"visitor.*"}, 0.1
		half.Events, half.VisitorSample = []string{VisitorAdmitted}, 0.5
		b.SetWebhooks([]WebhookConfig{hook("rooms", 10), tenth, half})
		const n = 20000
		for range n {
			if b.SampleVisitor("sale") {
				b.Publish(Event{Type: VisitorAdmitted, Room: "sale"})
			}
			if b.SampleVisitor("other") {
				t.Fatal("a room without visitor webhooks sampled")
			}
		}
		synctest.Wait()
		got := map[string]int64{}
		for _, s := range b.Stats() {
			got[s.Name] = s.Delivered + int64(s.Queued)
		}
		for name, p := range map[string]float64{"tenth": 0.1, "half": 0.5, "rooms": 0} {
			mean, sd := n*p, math.Sqrt(n*p*(1-p))
			if d := math.Abs(float64(got[name]) - mean); d > 5*sd+0.5 {
				t.Errorf("%s got %d of %d visitor events, want about %.0f", name, got[name], n, mean)
			}
		}
	})
}

// TestSlowSubscriber: a stream subscriber that does not read is cut off
// when its buffer is full, counted; publishing goes on without blocking.
func TestSlowSubscriber(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	slow := listen(t, b)
	for range cap(slow.ch) + 10 {
		b.Publish(Event{Type: SummaryMinute, Room: "sale"})
	}
	select {
	case <-slow.gone:
	default:
		t.Fatal("the slow subscriber is still subscribed")
	}
	if n, dropped := b.StreamStats(); n != 0 || dropped != 1 {
		t.Errorf("stream stats %d subscribers, %d dropped; want 0 and 1", n, dropped)
	}
}

// TestSign: Verify accepts what Sign made within the tolerance, and
// refuses another body, secret or time, and malformed headers.
func TestSign(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	body := []byte(`{"id":"x"}`)
	sig := Sign(testSecret, now, body)
	if !strings.HasPrefix(sig, "t=1800000000,v1=") || len(sig) != len("t=1800000000,v1=")+64 {
		t.Fatalf("Sign = %q", sig)
	}
	for _, tc := range []struct {
		name   string
		secret []byte
		header string
		body   []byte
		at     time.Time
		want   error
	}{
		{"good", testSecret, sig, body, now.Add(4 * time.Minute), nil},
		{"two signatures", testSecret, sig + ",v1=00", body, now, nil},
		{"other body", testSecret, sig, []byte(`{"id":"y"}`), now, ErrSignature},
		{"other secret", []byte("another-secret-0123"), sig, body, now, ErrSignature},
		{"too old", testSecret, sig, body, now.Add(6 * time.Minute), ErrSignatureTime},
		{"from the future", testSecret, sig, body, now.Add(-6 * time.Minute), ErrSignatureTime},
		{"no time", testSecret, "v1=" + strings.Repeat("0", 64), body, now, ErrSignatureFormat},
		{"no signature", testSecret, "t=1800000000", body, now, ErrSignatureFormat},
		{"bad hex", testSecret, "t=1800000000,v1=zz", body, now, ErrSignatureFormat},
		{"empty", testSecret, "", body, now, ErrSignatureFormat},
	} {
		if err := Verify(tc.secret, tc.header, tc.body, tc.at, 5*time.Minute); err != tc.want {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestMatchType covers the patterns of events and types.
func TestMatchType(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		typ      string
		want     bool
	}{
		{nil, QueueingStarted, true},
		{nil, VisitorAdmitted, false},
		{[]string{"*"}, BreakerOpened, true},
		{[]string{"*"}, VisitorAdmitted, false},
		{[]string{"visitor.*"}, VisitorAdmitted, true},
		{[]string{"queueing.*"}, QueueingStopped, true},
		{[]string{"queueing.*"}, SettingsChanged, false},
		{[]string{SettingsChanged}, SettingsChanged, true},
		{[]string{"queue.*"}, QueueingStarted, false},
	} {
		if got := matchAny(tc.patterns, tc.typ); got != tc.want {
			t.Errorf("matchAny(%v, %s) = %v, want %v", tc.patterns, tc.typ, got, tc.want)
		}
	}
	for p, want := range map[string]bool{"queueing.*": true, "*": true, "visitor.revoked": true, "room.exploded": false, "x.*": false, "": false} {
		if ValidPattern(p) != want {
			t.Errorf("ValidPattern(%q) = %v", p, !want)
		}
	}
}

// TestPublishChecks: an event of an unknown type is not published; an id
// that could break a stream line is replaced.
func TestPublishChecks(t *testing.T) {
	b := New(Options{Logger: slog.New(slog.DiscardHandler)})
	defer b.Close()
	s := listen(t, b)
	b.Publish(Event{Type: "room.exploded", Room: "sale"})
	b.Publish(Event{ID: "x\ndata: forged", Type: QueueingStarted, Room: "sale"})
	b.Publish(Event{ID: "keep-me_1", Type: QueueingStopped, Room: "sale"})
	got := drain(s)
	if len(got) != 2 || got[0].Type != QueueingStarted || !safeID(got[0].ID) || len(got[0].ID) != 24 || got[1].ID != "keep-me_1" {
		t.Errorf("published %+v", got)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestDrain: a stopping bus delivers what is queued while its receiver
// answers, and gives up at the deadline when it does not.
func TestDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rc := &recorder{next: func(int, *http.Request) (*http.Response, error) {
			time.Sleep(100 * time.Millisecond)
			return answer(200), nil
		}}
		b := New(Options{Transport: rc, Logger: discard()})
		b.SetWebhooks([]WebhookConfig{hook("ops", 10)})
		for range 5 {
			b.Publish(Event{Type: SummaryMinute, Room: "sale"})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		b.Drain(ctx)
		if s, d := len(rc.attempts()), time.Since(start); s != 5 || d < 500*time.Millisecond || d > 520*time.Millisecond {
			t.Errorf("drained %d in %s, want 5 in 500ms (checked every 20ms)", s, d)
		}

		hang := &recorder{next: func(_ int, r *http.Request) (*http.Response, error) {
			<-r.Context().Done()
			return nil, r.Context().Err()
		}}
		b = New(Options{Transport: hang, Logger: discard()})
		b.SetWebhooks([]WebhookConfig{hook("ops", 10)})
		for range 5 {
			b.Publish(Event{Type: SummaryMinute, Room: "sale"})
		}
		ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel2()
		start = time.Now()
		b.Drain(ctx2)
		if d := time.Since(start); d < 2*time.Second || d > 2100*time.Millisecond {
			t.Errorf("a drain with a hanging receiver took %s, want the 2s deadline", d)
		}
	})
}
