package admin

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

const testToken = "s3cret-token"

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// testRooms are "sale" (healthy), "broken" (status fails with a plain
// error) and "gone" (status fails with an *usher.Error).
func testRooms() []*usher.Room {
	return []*usher.Room{
		{
			ID:     "sale",
			Name:   "Big Sale",
			Origin: "http://origin.internal:8080",
			Routes: []usher.Route{{Host: "shop.example", Path: "/sale"}, {Path: "/checkout"}},
			Settings: usher.Settings{
				TotalActiveUsers:  200,
				NewUsersPerMinute: 50,
				SessionDuration:   5 * time.Minute,
				RefreshInterval:   20 * time.Second,
				QueueAll:          true,
				CookieAttributes:  usher.CookieAttributes{SameSite: "lax", Secure: "auto"},
			},
		},
		{ID: "broken", Name: "Broken", Settings: usher.Settings{QueueingMethod: usher.Random, Suspended: true}},
		{ID: "gone", Name: "Gone"},
	}
}

var errStoreDown = errors.New("dial tcp 10.0.0.1:6379: connection refused")

// testStatus answers for the rooms of testRooms.
func testStatus(_ context.Context, room *usher.Room, _ time.Time) (usher.RoomStats, error) {
	switch room.ID {
	case "sale":
		return usher.RoomStats{Active: 150, Waiting: 1234, AdmittedLastMinute: 42, Slots: 8}, nil
	case "gone":
		return usher.RoomStats{}, usher.Errorf(usher.EUnavailable, "store unreachable")
	}
	return usher.RoomStats{}, errStoreDown
}

// newTestHandler returns a Handler over testRooms with opts' zero fields
// filled in.
func newTestHandler(tb testing.TB, opts Options) *Handler {
	tb.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	if opts.Rooms == nil {
		opts.Rooms = testRooms
	}
	if opts.Status == nil {
		opts.Status = testStatus
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Now == nil {
		opts.Now = func() time.Time { return testNow }
	}
	if opts.Version == "" {
		opts.Version = "v0.1.0-test"
	}
	return New(opts)
}

// serve sends a request with an Authorization header (none if empty).
func serve(tb testing.TB, h http.Handler, method, path, authorization string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(method, path, nil)
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// MustDecode decodes rec's JSON body into a new T.
func MustDecode[T any](tb testing.TB, rec *httptest.ResponseRecorder) T {
	tb.Helper()
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		tb.Fatalf("Content-Type = %q, want JSON; body %s", ct, rec.Body)
	}
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		tb.Fatalf("decode %s: %v", rec.Body, err)
	}
	return v
}
