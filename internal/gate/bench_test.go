package gate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/server"
)

// BenchmarkAdmittedRequest is usher's own work for an admitted visitor's
// request, proxying to a local origin, with the middleware serve puts in
// front of the gate.
func BenchmarkAdmittedRequest(b *testing.B) {
	room := testRoom("sale")
	room.TotalActiveUsers = 1 << 30
	// The origin answers in memory, so that only usher's own work counts.
	g, _ := featureGate(b, room, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), func(o *gate.Options) {
		o.Transport = roundTripFunc(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"X-Origin": {"1"}},
				Body: io.NopCloser(strings.NewReader("inside")), Request: r}, nil
		})
	})
	h := server.RequestID(nil, server.Recover(nil, g))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/", nil))
	var c *http.Cookie
	for _, sc := range rec.Result().Cookies() {
		c = sc
	}
	if c == nil || rec.Header().Get("X-Origin") != "1" {
		b.Fatal("not admitted")
	}
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("GET", "http://shop.test/product/1", nil)
		req.AddCookie(c)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
		io.Copy(io.Discard, w.Body)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var _ = usher.Admit
