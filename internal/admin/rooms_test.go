package admin

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func TestRooms(t *testing.T) {
	h := newTestHandler(t, Options{})
	rec := serve(t, h, "GET", "/v1/rooms", "Bearer "+testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	got := MustDecode[struct {
		Rooms []map[string]any `json:"rooms"`
	}](t, rec)
	if len(got.Rooms) != 3 {
		t.Fatalf("got %d rooms, want 3: %s", len(got.Rooms), rec.Body)
	}
	sale := got.Rooms[0]
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"id", sale["id"], "sale"},
		{"name", sale["name"], "Big Sale"},
		{"origin", sale["origin"], "http://origin.internal:8080"},
		{"routes", len(sale["routes"].([]any)), 2},
		{"route host", sale["routes"].([]any)[0].(map[string]any)["host"], "shop.example"},
		{"route path", sale["routes"].([]any)[1].(map[string]any)["path"], "/checkout"},
		{"total_active_users", setting(sale, "total_active_users"), 200.0},
		{"new_users_per_minute", setting(sale, "new_users_per_minute"), 50.0},
		{"session_duration_seconds", setting(sale, "session_duration_seconds"), 300.0},
		{"refresh_interval_seconds", setting(sale, "refresh_interval_seconds"), 20.0},
		{"queueing_method default", setting(sale, "queueing_method"), "fifo"},
		{"queueing_method random", setting(got.Rooms[1], "queueing_method"), "random"},
		{"queue_all", setting(sale, "queue_all"), true},
		{"suspended", setting(got.Rooms[1], "suspended"), true},
		{"cookie samesite", setting(sale, "cookie_attributes").(map[string]any)["samesite"], "lax"},
		{"empty routes is a list", sale["routes"] != nil && got.Rooms[2]["routes"] != nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("got %v (%T), want %v (%T)", tt.got, tt.got, tt.want, tt.want)
			}
		})
	}
}

func setting(room map[string]any, name string) any {
	return room["settings"].(map[string]any)[name]
}

func TestRoomsEmpty(t *testing.T) {
	h := New(Options{Token: testToken})
	rec := serve(t, h, "GET", "/v1/rooms", "Bearer "+testToken)
	if body := strings.TrimSpace(rec.Body.String()); body != `{"rooms":[]}` {
		t.Errorf("body = %s, want an empty list", body)
	}
}

func TestRoomStatus(t *testing.T) {
	h := newTestHandler(t, Options{})
	rec := serve(t, h, "GET", "/v1/rooms/sale/status", "Bearer "+testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	got := MustDecode[map[string]any](t, rec)
	want := map[string]any{
		"id":                       "sale",
		"name":                     "Big Sale",
		"active":                   150.0,
		"waiting":                  1234.0,
		"admitted_last_minute":     42.0,
		"slots":                    8.0,
		"total_active_users":       200.0,
		"new_users_per_minute":     50.0,
		"session_duration_seconds": 300.0,
		"refresh_interval_seconds": 20.0,
		"queueing_method":          "fifo",
		"queue_all":                true,
		"suspended":                false,
		"time":                     "2026-03-01T12:00:00Z",
	}
	for field, w := range want {
		t.Run(field, func(t *testing.T) {
			if g, ok := got[field]; !ok || g != w {
				t.Errorf("%s = %v (%T), want %v (%T)", field, g, g, w, w)
			}
		})
	}
	if len(got) != len(want) {
		t.Errorf("got %d fields, want %d: %s", len(got), len(want), rec.Body)
	}
}

func TestRoomStatusErrors(t *testing.T) {
	tests := []struct {
		name       string
		path       string
		status     StatusFunc
		wantStatus int
		wantCode   string
		wantMsg    []string
		notMsg     string
	}{
		{
			name: "unknown room", path: "/v1/rooms/nosuch/status",
			wantStatus: http.StatusNotFound, wantCode: "not_found", wantMsg: []string{`"nosuch"`},
		},
		{
			name: "status fails with a plain error", path: "/v1/rooms/broken/status",
			wantStatus: http.StatusServiceUnavailable, wantCode: "unavailable", wantMsg: []string{`"broken"`, "unavailable"},
			notMsg: "10.0.0.1",
		},
		{
			name: "status fails with a domain error", path: "/v1/rooms/gone/status",
			wantStatus: http.StatusServiceUnavailable, wantCode: "unavailable", wantMsg: []string{`"gone"`, "store unreachable"},
		},
		{
			name: "status times out", path: "/v1/rooms/sale/status",
			status: func(ctx context.Context, _ *usher.Room, _ time.Time) (usher.RoomStats, error) {
				if _, ok := ctx.Deadline(); !ok {
					return usher.RoomStats{}, errors.New("status called without a deadline")
				}
				return usher.RoomStats{}, context.DeadlineExceeded
			},
			wantStatus: http.StatusServiceUnavailable, wantCode: "unavailable", wantMsg: []string{`"sale"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler(t, Options{Status: tt.status})
			rec := serve(t, h, "GET", tt.path, "Bearer "+testToken)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			e := MustDecode[errorJSON](t, rec)
			if e.Error.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Error.Code, tt.wantCode)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(e.Error.Message, m) {
					t.Errorf("message = %q, want it to contain %q", e.Error.Message, m)
				}
			}
			if tt.notMsg != "" && strings.Contains(e.Error.Message, tt.notMsg) {
				t.Errorf("message = %q leaks the cause %q", e.Error.Message, tt.notMsg)
			}
		})
	}
}

func TestStatusShowsARunningEventsLimits(t *testing.T) {
	now := time.Date(2026, 6, 1, 10, 30, 0, 0, time.UTC)
	limit, method := 50, usher.Random
	room := &usher.Room{ID: "drop", Name: "Drop", Settings: usher.Settings{TotalActiveUsers: 200, NewUsersPerMinute: 300, QueueingMethod: usher.FIFO},
		Events: []usher.Event{{Name: "e", Start: now.Add(-time.Minute), End: now.Add(time.Hour),
			Overrides: usher.Overrides{TotalActiveUsers: &limit, QueueingMethod: &method}}}}
	h := New(Options{Token: "t", Rooms: func() []*usher.Room { return []*usher.Room{room} }, Now: func() time.Time { return now },
		Status: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) { return usher.RoomStats{}, nil }})
	req := httptest.NewRequest("GET", "/v1/rooms/drop/status", nil)
	req.Header.Set("Authorization", "Bearer t")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	if rec.Code != 200 || !strings.Contains(body, `"total_active_users":50`) || !strings.Contains(body, `"queueing_method":"random"`) ||
		!strings.Contains(body, `"new_users_per_minute":300`) {
		t.Fatalf("status during an event: %d %s", rec.Code, body)
	}
}
