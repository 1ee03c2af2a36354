package gate_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/server"
)

// waitingLine is a gate in front of a room whose one place is taken, on a
// clock the benchmark moves (safe for concurrent use), with the server's
// handlers around it, and the cookies of its waiters.
type waitingLine struct {
	h       http.Handler
	mu      sync.Mutex
	now     time.Time
	cookies []*http.Cookie
}

// newWaitingLine returns a line of waiters (none has come yet) in a room
// whose check-ins come every refresh (zero: testRoom's).
func newWaitingLine(b *testing.B, waiters int, refresh time.Duration) *waitingLine {
	room := testRoom("sale")
	room.JSONResponseEnabled = true
	room.SessionDuration = 100_000 * time.Hour // the one place stays taken
	if refresh > 0 {
		room.RefreshInterval, room.MaxRefreshInterval = refresh, refresh
	}
	l := &waitingLine{now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), cookies: make([]*http.Cookie, waiters)}
	g, _ := featureGate(b, room, l.now, func(o *gate.Options) { o.Now = l.clock })
	l.h = server.RequestID(nil, server.Recover(nil, g))
	l.h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil)) // takes the one place
	return l
}

func (l *waitingLine) clock() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.now
}

func (l *waitingLine) advance(d time.Duration) {
	l.mu.Lock()
	l.now = l.now.Add(d)
	l.mu.Unlock()
}

// checkIn is waiter i's JSON check-in with its cookie (none the first
// time); it keeps the cookie the answer sets, and says what was wrong
// with an answer other than a wait.
func (l *waitingLine) checkIn(i int) error {
	req := httptest.NewRequest("GET", "http://shop.test/", nil)
	req.Header.Set("Accept", "application/json")
	if c := l.cookies[i]; c != nil {
		req.AddCookie(c)
	}
	w := httptest.NewRecorder()
	l.h.ServeHTTP(w, req)
	if w.Code != 200 || !strings.Contains(w.Body.String(), `"inWaitingRoom":true`) {
		return fmt.Errorf("at %v: status %d: %s", l.clock(), w.Code, w.Body)
	}
	for _, sc := range w.Result().Cookies() {
		l.cookies[i] = sc
	}
	return nil
}

// BenchmarkCheckInRequest is usher's own work for a waiter's check-in (the
// JSON answer, as the page's script asks it) when its ticket allows it:
// open the ticket, one store operation, seal the new ticket, render.
func BenchmarkCheckInRequest(b *testing.B) {
	l := newWaitingLine(b, 1, 0)
	if err := l.checkIn(0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		l.advance(6 * time.Second) // when the ticket says (5 s with its jitter)
		if err := l.checkIn(0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckInCrowd is a waiter's JSON check-in as in a standing line:
// 10,000 waiters take turns, each checking in once its interval has passed
// while the clock moves on a little per request, so that what usher works
// out once a second (the line's admission profile) or once per waiter (its
// count tables) is not redone on every request, as in
// BenchmarkCheckInRequest's line of one.
func BenchmarkCheckInCrowd(b *testing.B) {
	const waiters = 10_000
	l := newWaitingLine(b, waiters, 20*time.Second)
	// The waiters arrive over 10 s; then each checks in every 23 s (its
	// interval is at most 20 s and its jitter 2 s), the clock moving
	// 23 s / waiters a request.
	for i := range waiters {
		l.advance(10 * time.Second / waiters)
		if err := l.checkIn(i); err != nil {
			b.Fatal(err)
		}
	}
	l.advance(23 * time.Second)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		l.advance(23 * time.Second / waiters)
		if err := l.checkIn(i); err != nil {
			b.Fatal(err)
		}
		if i++; i == waiters {
			i = 0
		}
	}
}

// BenchmarkCheckInStack measures the goroutine stack a waiter's check-in
// leaves behind: 10,000 waiters join, then each operation is one of them
// checking in (JSON, its interval passed) on a goroutine of its own, which
// then stays parked, as a keep-alive connection's goroutine waits for its
// next request with the stack it grew to; stack-B/op is the stack in use
// per parked goroutine.
func BenchmarkCheckInStack(b *testing.B) {
	const waiters = 10_000
	l := newWaitingLine(b, waiters, 20*time.Second)
	for i := range waiters {
		l.advance(10 * time.Second / waiters)
		if err := l.checkIn(i); err != nil {
			b.Fatal(err)
		}
	}
	l.advance(23 * time.Second)
	release := make(chan struct{})
	var wg sync.WaitGroup
	var before, after runtime.MemStats
	// No collection during the measurement: it would shrink the parked
	// goroutines' stacks, as it does in a server over time.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	runtime.ReadMemStats(&before)
	n := 0
	for b.Loop() {
		l.advance(23 * time.Second / waiters)
		done := make(chan struct{})
		i := n % waiters
		wg.Go(func() {
			if err := l.checkIn(i); err != nil {
				b.Error(err)
			}
			close(done)
			<-release
		})
		<-done
		n++
	}
	runtime.ReadMemStats(&after)
	close(release)
	wg.Wait()
	b.ReportMetric(float64(after.StackInuse-before.StackInuse)/float64(n), "stack-B/op")
}

// BenchmarkCheckInConnStack is BenchmarkCheckInStack through net/http's
// server: each operation is a keep-alive connection (raw TCP, no client
// goroutines) that joins and then checks in once; stack-B/op is the stack
// in use per idle connection afterwards, the server's goroutine parked in
// its read for the next request.
func BenchmarkCheckInConnStack(b *testing.B) {
	l := newWaitingLine(b, 0, 20*time.Second)
	srv := httptest.NewServer(l.h)
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	exchange := func(c net.Conn, br *bufio.Reader, cookie string) string {
		req := "GET / HTTP/1.1\r\nHost: shop.test\r\nAccept: application/json\r\n"
		if cookie != "" {
			req += "Cookie: " + cookie + "\r\n"
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			b.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"inWaitingRoom":true`) {
			b.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		for _, sc := range resp.Cookies() {
			cookie = sc.Name + "=" + sc.Value
		}
		return cookie
	}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	var before, after runtime.MemStats
	// No collection during the measurement: it would shrink the parked
	// goroutines' stacks, as it does in a server over time.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
		br := bufio.NewReader(c)
		cookie := exchange(c, br, "")
		l.advance(25 * time.Second) // past its interval and jitter
		exchange(c, br, cookie)
	}
	time.Sleep(50 * time.Millisecond) // the server's goroutines back in their reads
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.StackInuse-before.StackInuse)/float64(len(conns)), "stack-B/op")
}
