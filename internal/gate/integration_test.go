package gate_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
)

// These tests put the real engine, store and ticket ring behind the gate:
// what a visitor sends decides nothing but through a sealed ticket.

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type stack struct {
	gate   *gate.Gate
	clock  *clock
	origin *httptest.Server
	seen   chan http.Header // request headers the origin saw
}

func mustKey(t testing.TB, id string) usher.Key {
	t.Helper()
	k, err := ticket.GenerateKey(id)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newStack(t *testing.T, keys []usher.Key, rooms ...*usher.Room) *stack {
	t.Helper()
	s := &stack{clock: &clock{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}, seen: make(chan http.Header, 100)}
	s.origin = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case s.seen <- r.Header.Clone():
		default:
		}
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, "inside")
	}))
	t.Cleanup(s.origin.Close)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ring, err := ticket.NewRing(keys)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rooms {
		r.Origin = s.origin.URL
	}
	s.gate, err = gate.New(gate.Options{
		Rooms:   rooms,
		Decider: admission.New(st, admission.Options{}),
		Sealer:  ring,
		Now:     s.clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testRoom(id string) *usher.Room {
	return &usher.Room{ID: id, Name: id, Routes: []usher.Route{{Path: "/"}}, Settings: usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: time.Minute,
		RefreshInterval: 5 * time.Second, JSONResponseEnabled: true,
	}}
}

type answer struct {
	admitted bool
	position int
	cookie   *http.Cookie
}

// get sends one request with the cookie (nil: none) and says what came back.
func (s *stack) get(t *testing.T, host, path string, c *http.Cookie) answer {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://"+host+path, nil)
	req.Header.Set("Accept", "application/json")
	if c != nil {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	s.gate.ServeHTTP(rec, req)
	var a answer
	for _, sc := range rec.Result().Cookies() {
		if strings.HasPrefix(sc.Name, "__usher_wr") {
			a.cookie = sc
		}
	}
	if rec.Header().Get("X-Origin") == "1" {
		a.admitted = true
		return a
	}
	var body struct {
		Room struct {
			In       bool `json:"inWaitingRoom"`
			Position int  `json:"position"`
		} `json:"usherWaitingRoom"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || !body.Room.In {
		t.Fatalf("neither the origin nor the waiting page: %d %q", rec.Code, rec.Body.String())
	}
	a.position = body.Room.Position
	return a
}

func TestGateWithEngineKeepsTheLine(t *testing.T) {
	s := newStack(t, []usher.Key{mustKey(t, "k1")}, testRoom("sale"))
	first := s.get(t, "shop.test", "/", nil)
	if !first.admitted || first.cookie == nil {
		t.Fatalf("first visitor: %+v, want admitted with a ticket", first)
	}
	if h := <-s.seen; strings.Contains(h.Get("Cookie"), "__usher_wr") {
		t.Fatalf("the origin saw the usher cookie: %q", h.Get("Cookie"))
	}
	second := s.get(t, "shop.test", "/", nil)
	if second.admitted || second.position != 1 || second.cookie == nil {
		t.Fatalf("second visitor: %+v, want waiting first in line with a ticket", second)
	}
	third := s.get(t, "shop.test", "/", nil)
	if third.position != 1 { // same arrival second: nobody ahead
		t.Fatalf("third visitor in the same second: position %d", third.position)
	}
	s.clock.Add(time.Second)
	fourth := s.get(t, "shop.test", "/", nil)
	if fourth.position != 3 {
		t.Fatalf("fourth visitor a second later: position %d, want 3", fourth.position)
	}
	// The admitted visitor stays in for its whole session.
	for range 10 {
		s.clock.Add(5 * time.Second)
		a := s.get(t, "shop.test", "/cart", first.cookie)
		if !a.admitted {
			t.Fatal("the admitted visitor was sent back to the line")
		}
		if a.cookie != nil {
			first.cookie = a.cookie
		}
	}
}

func TestGateTamperingFailsClosed(t *testing.T) {
	k1 := mustKey(t, "k1")
	s := newStack(t, []usher.Key{k1}, testRoom("sale"))
	in := s.get(t, "shop.test", "/", nil)
	if !in.admitted {
		t.Fatal("first visitor not admitted")
	}
	other := newStack(t, []usher.Key{mustKey(t, "k1")}, testRoom("sale"))
	forgedByOtherKey := other.get(t, "shop.test", "/", nil).cookie

	val := in.cookie.Value
	flip := func(i int) string {
		b := []byte(val)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	attacks := map[string]string{
		"altered first":             flip(0),
		"altered middle":            flip(len(val) / 2),
		"altered last":              flip(len(val) - 1),
		"truncated":                 val[:len(val)-4],
		"extended":                  val + "AAAA",
		"empty":                     "",
		"garbage":                   strings.Repeat("x", 120),
		"same key id, other secret": forgedByOtherKey.Value,
	}
	for name, v := range attacks {
		t.Run(name, func(t *testing.T) {
			a := s.get(t, "shop.test", "/", &http.Cookie{Name: in.cookie.Name, Value: v})
			if a.admitted {
				t.Fatal("a tampered ticket got in")
			}
			if a.position < 1 || a.cookie == nil {
				t.Fatalf("tampered ticket: %+v, want a new waiter with a new ticket", a)
			}
		})
	}
	if a := s.get(t, "shop.test", "/", in.cookie); !a.admitted {
		t.Fatal("the genuine ticket no longer works")
	}
}

func TestGateTicketBoundToRoom(t *testing.T) {
	a, b := testRoom("a"), testRoom("b")
	a.Routes = []usher.Route{{Host: "a.test", Path: "/"}}
	b.Routes = []usher.Route{{Host: "b.test", Path: "/"}}
	s := newStack(t, []usher.Key{mustKey(t, "k1")}, a, b)
	inB := s.get(t, "b.test", "/", nil)
	if !inB.admitted {
		t.Fatal("not admitted to b")
	}
	if got := s.get(t, "a.test", "/", nil); !got.admitted {
		t.Fatal("not admitted to a")
	}
	// Room a is now full; b's ticket (same cookie name) must not open there.
	if got := s.get(t, "a.test", "/", inB.cookie); got.admitted {
		t.Fatal("a ticket of room b got into room a")
	}
}

func TestGateKeyRotation(t *testing.T) {
	k1, k2 := mustKey(t, "k1"), mustKey(t, "k2")
	room := testRoom("sale")
	old := newStack(t, []usher.Key{k1}, room)
	in := old.get(t, "shop.test", "/", nil)
	// The same room behind a rotated ring that still holds k1 (its store is
	// fresh, so the visitor's ticket alone must carry it).
	rotated := newStack(t, []usher.Key{k2, k1}, testRoom("sale"))
	rotated.clock.now = old.clock.now.Add(6 * time.Second)
	a := rotated.get(t, "shop.test", "/", in.cookie)
	if !a.admitted {
		t.Fatal("a ticket sealed with a rotated-out key still in the ring was refused")
	}
	if a.cookie == nil || !strings.HasPrefix(a.cookie.Value, "AQJrMg") { // version 1, id "k2"
		t.Logf("renewed ticket %v", a.cookie)
	}
	dropped := newStack(t, []usher.Key{k2}, testRoom("sale"))
	dropped.get(t, "shop.test", "/", nil) // fills the room
	if a := dropped.get(t, "shop.test", "/", in.cookie); a.admitted {
		t.Fatal("a ticket sealed with a key no longer in the ring got in")
	}
}
