package admin

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/notify"
)

// slotsHandler is a handler with a live and an event stream, the write
// token "admin", a second write token "ops" and read tokens r0..r(n-1).
func slotsHandler(reads int, m *Metrics) (*Handler, *notify.Bus) {
	rooms := []*usher.Room{{ID: "a", Settings: usher.Settings{TotalActiveUsers: 5, NewUsersPerMinute: 7}}}
	tokens := []Token{{Name: "ops", Secret: "ops-secret", Write: true}}
	for i := range reads {
		tokens = append(tokens, Token{Name: fmt.Sprintf("r%d", i), Secret: fmt.Sprintf("read-%d", i)})
	}
	bus := notify.New(notify.Options{Logger: slog.New(slog.DiscardHandler)})
	return New(Options{
		Token:   writeToken,
		Tokens:  tokens,
		Rooms:   func() []*usher.Room { return rooms },
		Logger:  slog.New(slog.DiscardHandler),
		Status:  func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) { return usher.RoomStats{}, nil },
		Events:  bus,
		Metrics: m,
	}), bus
}

// streams opens streams and keeps them open until stop is called.
type streams struct {
	h      *Handler
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// open starts a stream of path with token; it returns the refusal's
// status and body, or 200 and "" once the stream runs.
func (s *streams) open(path, token string) (int, string) {
	req := httptest.NewRequestWithContext(s.ctx, "GET", path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	w := &streamWriter{hdr: http.Header{}}
	done := make(chan struct{})
	s.wg.Go(func() { defer close(done); s.h.ServeHTTP(w, req) })
	synctest.Wait()
	select {
	case <-done:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.status, w.buf.String()
	default:
		return http.StatusOK, ""
	}
}

func (s *streams) stop() { s.cancel(); s.wg.Wait() }

// TestStreamSlotsPerToken (attack 11 of issue 21): a read token opening
// live and event streams until refused gets 16 of each, then 429 naming
// its share; read tokens together get 48, then 429 naming the reserve;
// the write tokens' dashboards still open both streams, until the node's
// 64 are open (503). The metrics count the streams and the refusals.
// Before the shares, one token took all 64 and the write token got 503.
func TestStreamSlotsPerToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetrics(func() []*usher.Room { return nil }, nil)
		h, bus := slotsHandler(4, m)
		defer bus.Close()
		defer h.Close()
		ctx, cancel := context.WithCancel(context.Background())
		s := &streams{h: h, ctx: ctx, cancel: cancel}
		defer s.stop()
		for _, path := range []string{"/api/v1/live", "/api/v1/stream"} {
			kind := map[string]string{"/api/v1/live": "live", "/api/v1/stream": "event"}[path]
			opened := 0
			for {
				code, body := s.open(path, "read-0")
				if code != http.StatusOK {
					if code != http.StatusTooManyRequests || !strings.Contains(body, `token \"r0\" holds 16 `+kind+` streams, the most one token may (16 per token)`) {
						t.Fatalf("%s: stream %d of one read token: %d %s", path, opened+1, code, body)
					}
					break
				}
				if opened++; opened > 64 {
					t.Fatalf("%s: one read token opened %d streams", path, opened)
				}
			}
			if opened != DefaultStreamSlotsPerToken {
				t.Errorf("%s: one read token opened %d streams, want %d", path, opened, DefaultStreamSlotsPerToken)
			}
			// The other read tokens fill the read share.
			for i := 1; i < 3; i++ {
				for range DefaultStreamSlotsPerToken {
					if code, body := s.open(path, fmt.Sprintf("read-%d", i)); code != http.StatusOK {
						t.Fatalf("%s: read token r%d: %d %s", path, i, code, body)
					}
				}
			}
			code, body := s.open(path, "read-3")
			if code != http.StatusTooManyRequests || !strings.Contains(body, "read tokens hold 48 "+kind+" streams, the most they may: the other 16 are kept for write tokens") {
				t.Fatalf("%s: a read token past the read share: %d %s", path, code, body)
			}
			// The operators' dashboard still opens its stream.
			if code, body := s.open(path, writeToken); code != http.StatusOK {
				t.Fatalf("%s: the write token's stream after the read tokens took their share: %d %s", path, code, body)
			}
			for range DefaultStreamSlotsReserved - 1 {
				if code, body := s.open(path, "ops-secret"); code != http.StatusOK {
					t.Fatalf("%s: write token ops: %d %s", path, code, body)
				}
			}
			code, body = s.open(path, writeToken)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "all 64 "+kind+" streams of this node are open") {
				t.Fatalf("%s: a stream past the node's 64: %d %s", path, code, body)
			}
		}
		for _, tc := range []struct {
			stream, scope string
			want          float64
		}{{"live", "read", 48}, {"live", "write", 16}, {"event", "read", 48}, {"event", "write", 16}} {
			if got := gauge(t, m, "usher_admin_stream_slots_held", tc.stream, tc.scope); got != tc.want {
				t.Errorf("usher_admin_stream_slots_held{stream=%q,scope=%q} = %v, want %v", tc.stream, tc.scope, got, tc.want)
			}
		}
		if got := gauge(t, m, "usher_admin_stream_refused_total", "event", "read_share"); got != 1 {
			t.Errorf("events streams refused for the read share: %v, want 1", got)
		}
		s.stop()
		if got := gauge(t, m, "usher_admin_stream_slots_held", "live", "read"); got != 0 {
			t.Errorf("live streams held by read tokens once closed: %v", got)
		}
	})
}

// gauge returns the value of the series of name whose stream and other
// label are those given.
func gauge(t *testing.T, m *Metrics, name, stream, other string) float64 {
	t.Helper()
	mfs, err := m.registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			var labels []string
			for _, l := range mt.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			if strings.Join(labels, ",") == stream+","+other || strings.Join(labels, ",") == other+","+stream {
				if mt.GetGauge() != nil {
					return mt.GetGauge().GetValue()
				}
				return mt.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s{%s,%s}", name, stream, other)
	return 0
}

// TestStreamSlotsRelease: a slot comes back when its stream ends, once
// however often release is called; the limits keep to Total.
func TestStreamSlotsRelease(t *testing.T) {
	s := newStreamSlots("live", StreamSlots{Total: 4, PerToken: 2, Reserved: 1})
	var rels []func()
	for range 2 {
		rel, r := s.acquire("r", false)
		if r != nil {
			t.Fatal(r.msg)
		}
		rels = append(rels, rel)
	}
	if _, r := s.acquire("r", false); r == nil || r.limit != limitToken {
		t.Fatalf("third stream of r: %+v, want the token's limit", r)
	}
	rels[0]()
	rels[0]()
	if _, r := s.acquire("r", false); r != nil {
		t.Fatalf("after a release: %s", r.msg)
	}
	if _, r := s.acquire("q", false); r != nil {
		t.Fatalf("q: %s", r.msg)
	}
	if _, r := s.acquire("q", false); r == nil || r.limit != limitReserved {
		t.Fatalf("a fourth read stream: %+v, want the read share's limit", r)
	}
	if _, r := s.acquire("w", true); r != nil {
		t.Fatalf("the write token: %s", r.msg)
	}
	if _, r := s.acquire("w", true); r == nil || r.limit != limitNode {
		t.Fatalf("a fifth stream: %+v, want the node's limit", r)
	}
	var n int64
	for _, c := range s.refused {
		n += c
	}
	if n != 3 {
		t.Errorf("refusals counted %v, want 3", s.refused)
	}
}
