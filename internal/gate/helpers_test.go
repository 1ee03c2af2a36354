package gate

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testNow is the time of every decision in the tests.
var testNow = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// fakeDecider is a function-field Decider that records its calls.
type fakeDecider struct {
	DecideFn func(ctx context.Context, room *usher.Room, t *usher.Ticket, now time.Time) (usher.Decision, error)
	StatusFn func(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error)

	mu      sync.Mutex
	tickets []*usher.Ticket // the ticket of each Decide call
	visits  []usher.Visit
}

func (f *fakeDecider) Decide(ctx context.Context, room *usher.Room, v usher.Visit) (usher.Decision, error) {
	f.mu.Lock()
	f.tickets = append(f.tickets, v.Ticket)
	f.visits = append(f.visits, v)
	f.mu.Unlock()
	if f.DecideFn == nil {
		return admitNew(), nil
	}
	return f.DecideFn(ctx, room, v.Ticket, v.Now)
}

func (f *fakeDecider) Status(ctx context.Context, room *usher.Room, now time.Time) (usher.RoomStats, error) {
	if f.StatusFn == nil {
		return usher.RoomStats{}, nil
	}
	return f.StatusFn(ctx, room, now)
}

func (f *fakeDecider) calls() []*usher.Ticket {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*usher.Ticket(nil), f.tickets...)
}

// decide returns a DecideFn that always answers d.
func decide(d usher.Decision) func(context.Context, *usher.Room, *usher.Ticket, time.Time) (usher.Decision, error) {
	return func(context.Context, *usher.Room, *usher.Ticket, time.Time) (usher.Decision, error) { return d, nil }
}

func admitNew() usher.Decision {
	return usher.Decision{Outcome: usher.Admit, TicketChanged: true, NewlyAdmitted: true,
		Ticket: usher.Ticket{VisitorID: [8]byte{1}, State: usher.Admitted, ArrivedAt: testNow, AdmittedAt: testNow}}
}

func waiting(pos int64) usher.Decision {
	return usher.Decision{Outcome: usher.Wait, TicketChanged: true, Position: pos, WaitKnown: true,
		EstimatedWait: 150 * time.Second, RefreshAfter: 19500 * time.Millisecond,
		Stats:  usher.RoomStats{Waiting: 40, AdmittedLastMinute: 4, Active: 100},
		Ticket: usher.Ticket{VisitorID: [8]byte{2}, State: usher.Waiting, ArrivedAt: testNow}}
}

// fakeSealer seals tickets as base64 JSON bound to room and cookie name.
type fakeSealer struct{}

type sealed struct {
	Room, Cookie string
	Ticket       usher.Ticket
}

func (fakeSealer) Seal(t *usher.Ticket, room, cookieName string) (string, error) {
	b, err := json.Marshal(sealed{room, cookieName, *t})
	return base64.RawURLEncoding.EncodeToString(b), err
}

// Binding is a keyed-looking stand-in: a hash of data with the top bit
// set (the real sealer keys it; see internal/ticket).
func (fakeSealer) Binding(data []byte) uint64 {
	h := fnv.New64a()
	h.Write(data)
	return h.Sum64() | 1<<63
}

func (f fakeSealer) Bound(b uint64, data []byte) bool { return b != 0 && b == f.Binding(data) }

func (fakeSealer) Open(value, room, cookieName string) (usher.Ticket, error) {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return usher.Ticket{}, err
	}
	var s sealed
	if err := json.Unmarshal(b, &s); err != nil {
		return usher.Ticket{}, err
	}
	if s.Room != room || s.Cookie != cookieName {
		return usher.Ticket{}, errors.New("ticket of another room")
	}
	return s.Ticket, nil
}

func mustSeal(tb testing.TB, t usher.Ticket, room *usher.Room) string {
	tb.Helper()
	v, err := fakeSealer{}.Seal(&t, room.ID, room.CookieName())
	if err != nil {
		tb.Fatal(err)
	}
	return v
}

// seen is what an origin saw of one request.
type seen struct {
	Host, Path, RawPath string
	Header              http.Header
}

// origin is a test origin that records the requests it gets and answers
// "origin <path>" with a cookie of its own.
type origin struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newOrigin(tb testing.TB) *origin {
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.reqs = append(o.reqs, seen{r.Host, r.URL.Path, r.URL.RawPath, r.Header.Clone()})
		o.mu.Unlock()
		w.Header().Add("Set-Cookie", "origin=1; Path=/")
		_, _ = io.WriteString(w, "origin "+r.URL.Path)
	}))
	tb.Cleanup(o.Close)
	return o
}

func (o *origin) requests() []seen {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]seen(nil), o.reqs...)
}

// testRoom returns a room with a route at path on any host, proxied to
// originURL.
func testRoom(id, path, originURL string) *usher.Room {
	return &usher.Room{ID: id, Name: "Room " + id, Origin: originURL, Routes: []usher.Route{{Path: path}},
		Settings: usher.Settings{TotalActiveUsers: 100, NewUsersPerMinute: 50, SessionDuration: 5 * time.Minute,
			RefreshInterval: 20 * time.Second}}
}

// newGate returns a gate over opts with the fakes filled in, and a buffer
// of its logs.
func newGate(tb testing.TB, opts Options) (*Gate, *bytes.Buffer) {
	tb.Helper()
	logs := &bytes.Buffer{}
	if opts.Decider == nil {
		opts.Decider = &fakeDecider{}
	}
	if opts.Sealer == nil {
		opts.Sealer = fakeSealer{}
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	g, err := New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	return g, logs
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// serve runs r through h from a client at 203.0.113.7 unless r says
// otherwise.
func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	if r.RemoteAddr == "192.0.2.1:1234" { // httptest's default
		r.RemoteAddr = "203.0.113.7:5555"
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func trusted() []netip.Prefix { return []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} }

func golden(tb testing.TB, name string, got []byte) {
	tb.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			tb.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("%v (run go test -update)", err)
	}
	if !bytes.Equal(got, want) {
		tb.Errorf("%s differs from the golden file; got:\n%s\nwant:\n%s", name, got, want)
	}
}

// setCookie returns the response's Set-Cookie named name, or nil.
func setCookie(w *httptest.ResponseRecorder, name string) *http.Cookie {
	for _, c := range w.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}
