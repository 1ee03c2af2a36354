package admin

import (
	"net/http"
	"strings"
	"testing"
)

func TestAuth(t *testing.T) {
	bearer := "Bearer " + testToken
	tests := []struct {
		name       string
		noToken    bool // configure no token at all
		method     string
		path       string
		auth       string
		wantStatus int
		wantMsg    string // in the 401 message
	}{
		{name: "healthz without token", method: "GET", path: "/healthz", wantStatus: http.StatusOK},
		{name: "healthz head without token", method: "HEAD", path: "/healthz", wantStatus: http.StatusOK},
		{name: "rooms missing token", method: "GET", path: "/v1/rooms", wantStatus: http.StatusUnauthorized, wantMsg: "missing"},
		{name: "rooms wrong token", method: "GET", path: "/v1/rooms", auth: "Bearer nope", wantStatus: http.StatusUnauthorized, wantMsg: "invalid"},
		{name: "rooms token prefix", method: "GET", path: "/v1/rooms", auth: bearer[:len(bearer)-1], wantStatus: http.StatusUnauthorized, wantMsg: "invalid"},
		{name: "rooms token with suffix", method: "GET", path: "/v1/rooms", auth: bearer + "x", wantStatus: http.StatusUnauthorized, wantMsg: "invalid"},
		{name: "rooms basic scheme", method: "GET", path: "/v1/rooms", auth: "Basic " + testToken, wantStatus: http.StatusUnauthorized, wantMsg: "bearer"},
		{name: "rooms bearer without token", method: "GET", path: "/v1/rooms", auth: "Bearer ", wantStatus: http.StatusUnauthorized, wantMsg: "bearer"},
		{name: "rooms right token", method: "GET", path: "/v1/rooms", auth: bearer, wantStatus: http.StatusOK},
		{name: "rooms lowercase scheme", method: "GET", path: "/v1/rooms", auth: "bearer " + testToken, wantStatus: http.StatusOK},
		{name: "status missing token", method: "GET", path: "/v1/rooms/sale/status", wantStatus: http.StatusUnauthorized, wantMsg: "missing"},
		{name: "status right token", method: "GET", path: "/v1/rooms/sale/status", auth: bearer, wantStatus: http.StatusOK},
		{name: "metrics missing token", method: "GET", path: "/metrics", wantStatus: http.StatusUnauthorized, wantMsg: "missing"},
		{name: "metrics wrong token", method: "GET", path: "/metrics", auth: "Bearer nope", wantStatus: http.StatusUnauthorized, wantMsg: "invalid"},
		{name: "unknown path hides behind token", method: "GET", path: "/v1/secret", wantStatus: http.StatusUnauthorized, wantMsg: "missing"},
		{name: "healthz wrong method needs token", method: "POST", path: "/healthz", wantStatus: http.StatusUnauthorized, wantMsg: "missing"},
		{name: "empty configured token fails closed", noToken: true, method: "GET", path: "/v1/rooms", auth: "Bearer x", wantStatus: http.StatusUnauthorized, wantMsg: "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Metrics: NewMetrics(testRooms, testStatus)}
			h := newTestHandler(t, opts)
			if tt.noToken {
				h = New(Options{Rooms: testRooms})
			}
			rec := serve(t, h, tt.method, tt.path, tt.auth)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			if tt.wantStatus != http.StatusUnauthorized {
				if got := rec.Header().Get("WWW-Authenticate"); got != "" {
					t.Errorf("WWW-Authenticate = %q on an authorised request", got)
				}
				return
			}
			if got := rec.Header().Get("WWW-Authenticate"); got != "Bearer" {
				t.Errorf("WWW-Authenticate = %q, want Bearer", got)
			}
			e := MustDecode[errorJSON](t, rec)
			if e.Error.Code != "unauthorized" {
				t.Errorf("code = %q, want unauthorized", e.Error.Code)
			}
			if !strings.Contains(e.Error.Message, tt.wantMsg) {
				t.Errorf("message = %q, want it to contain %q", e.Error.Message, tt.wantMsg)
			}
		})
	}
}

func TestHealthz(t *testing.T) {
	h := newTestHandler(t, Options{Version: "v1.2.3"})
	rec := serve(t, h, "GET", "/healthz", "")
	if rec.Code != http.StatusOK {
		t.Fatalf("status = %d, body %s", rec.Code, rec.Body)
	}
	got := MustDecode[map[string]string](t, rec)
	if got["status"] != "ok" || got["version"] != "v1.2.3" {
		t.Errorf("body = %v, want status ok and version v1.2.3", got)
	}
}

func TestRouting(t *testing.T) {
	bearer := "Bearer " + testToken
	tests := []struct {
		name       string
		method     string
		path       string
		wantStatus int
		wantCode   string
		wantAllow  string
	}{
		{name: "post rooms", method: "POST", path: "/v1/rooms", wantStatus: http.StatusMethodNotAllowed, wantCode: codeMethodNotAllowed, wantAllow: "GET, HEAD"},
		{name: "delete status", method: "DELETE", path: "/v1/rooms/sale/status", wantStatus: http.StatusMethodNotAllowed, wantCode: codeMethodNotAllowed, wantAllow: "GET, HEAD"},
		{name: "post healthz", method: "POST", path: "/healthz", wantStatus: http.StatusMethodNotAllowed, wantCode: codeMethodNotAllowed, wantAllow: "GET, HEAD"},
		{name: "put metrics", method: "PUT", path: "/metrics", wantStatus: http.StatusMethodNotAllowed, wantCode: codeMethodNotAllowed, wantAllow: "GET, HEAD"},
		{name: "unknown path", method: "GET", path: "/v1/nope", wantStatus: http.StatusNotFound, wantCode: "not_found"},
		{name: "post root (the dashboard)", method: "POST", path: "/", wantStatus: http.StatusMethodNotAllowed, wantCode: codeMethodNotAllowed, wantAllow: "GET, HEAD"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHandler(t, Options{Metrics: NewMetrics(testRooms, testStatus)})
			rec := serve(t, h, tt.method, tt.path, bearer)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tt.wantStatus, rec.Body)
			}
			e := MustDecode[errorJSON](t, rec)
			if e.Error.Code != tt.wantCode {
				t.Errorf("code = %q, want %q", e.Error.Code, tt.wantCode)
			}
			if got := rec.Header().Get("Allow"); got != tt.wantAllow {
				t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
			}
		})
	}
}

func TestMetricsDisabled(t *testing.T) {
	h := newTestHandler(t, Options{})
	rec := serve(t, h, "GET", "/metrics", "Bearer "+testToken)
	if rec.Code != http.StatusNotFound {
		t.Fatalf("status = %d, want 404 without Metrics; body %s", rec.Code, rec.Body)
	}
}
