package gate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/server"
)

// BenchmarkCheckInRequest is usher's own work for a waiter's check-in (the
// JSON answer, as the page's script asks it) when its ticket allows it:
// open the ticket, one store operation, seal the new ticket, render.
func BenchmarkCheckInRequest(b *testing.B) {
	room := testRoom("sale")
	room.JSONResponseEnabled = true
	room.SessionDuration = 100_000 * time.Hour // the one place stays taken
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	g, _ := featureGate(b, room, now, func(o *gate.Options) {
		o.Now = func() time.Time { return now }
	})
	h := server.RequestID(nil, server.Recover(nil, g))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil)) // takes the one place
	var c *http.Cookie
	check := func() {
		req := httptest.NewRequest("GET", "http://shop.test/", nil)
		req.Header.Set("Accept", "application/json")
		if c != nil {
			req.AddCookie(c)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		body, _ := io.ReadAll(w.Body)
		if w.Code != 200 || !strings.Contains(string(body), `"inWaitingRoom":true`) {
			b.Fatalf("at %v: status %d: %s", now, w.Code, body)
		}
		for _, sc := range w.Result().Cookies() {
			c = sc
		}
	}
	check()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(6 * time.Second) // when the ticket says (5 s with its jitter)
		check()
	}
}
