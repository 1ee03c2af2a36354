package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/usherhq/usher"
)

func TestError(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		status  int
		message string
	}{
		{"invalid", usher.Errorf(usher.EInvalid, "bad room id"), 400, "bad room id"},
		{"unauthorized", usher.Errorf(usher.EUnauthorized, "no token"), 401, "no token"},
		{"not found", fmt.Errorf("lookup: %w", usher.Errorf(usher.ENotFound, "no such room")), 404, "no such room"},
		{"unavailable", usher.Errorf(usher.EUnavailable, "store down"), 503, "store down"},
		{"internal", usher.Errorf(usher.EInternal, "oops"), 500, "oops"},
		{"plain error hidden", errors.New("secret db dsn leaked"), 500, "internal error"},
	}
	for _, tt := range tests {
		for _, asJSON := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/json=%v", tt.name, asJSON), func(t *testing.T) {
				var logs bytes.Buffer
				logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
				r := httptest.NewRequest("GET", "/x", nil)
				ctx := context.WithValue(ContextWithLogger(r.Context(), logger), requestIDKey{}, "RID1")
				r = r.WithContext(ctx)
				if asJSON {
					r.Header.Set("Accept", "application/json")
				}
				w := httptest.NewRecorder()
				Error(w, r, tt.err)
				if w.Code != tt.status {
					t.Errorf("status = %d, want %d", w.Code, tt.status)
				}
				body := w.Body.String()
				if asJSON {
					var got struct {
						Error     string `json:"error"`
						Status    int    `json:"status"`
						RequestID string `json:"request_id"`
					}
					if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
						t.Fatalf("body %q: %v", body, err)
					}
					if got.Error != tt.message || got.Status != tt.status || got.RequestID != "RID1" {
						t.Errorf("json = %+v", got)
					}
				} else if !strings.Contains(body, tt.message[1:]) || !strings.Contains(body, "RID1") {
					t.Errorf("page lacks message or request id:\n%s", body)
				}
				if strings.Contains(body, "secret") {
					t.Error("cause leaked to the client")
				}
				if got := w.Header().Get("Cache-Control"); got != "no-store" {
					t.Errorf("Cache-Control = %q", got)
				}
				if (tt.status == 503) != (w.Header().Get("Retry-After") != "") {
					t.Errorf("Retry-After = %q for %d", w.Header().Get("Retry-After"), tt.status)
				}
				if !strings.Contains(logs.String(), `"request_id":"RID1"`) || !strings.Contains(logs.String(), tt.err.Error()) {
					t.Errorf("log lacks request id or cause: %s", logs.String())
				}
			})
		}
	}
}

func TestWriteErrorKeepsHeaders(t *testing.T) {
	w := httptest.NewRecorder()
	w.Header().Set("Retry-After", "30")
	w.Header().Add("Set-Cookie", "a=b")
	WriteError(w, httptest.NewRequest("GET", "/", nil), http.StatusServiceUnavailable, "down")
	if w.Header().Get("Retry-After") != "30" || w.Header().Get("Set-Cookie") != "a=b" {
		t.Errorf("headers lost: %v", w.Header())
	}
	if !strings.Contains(w.Body.String(), "Down.") {
		t.Errorf("message not made a sentence: %s", w.Body.String())
	}
}

func TestAcceptsJSON(t *testing.T) {
	tests := []struct {
		accept string
		want   bool
	}{
		{"", false},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", false},
		{"application/json", true},
		{"Application/JSON; charset=utf-8", true},
		{"application/json, text/plain, */*", true},
		{"text/html, application/json;q=0", false},
		{"application/json;q=0.0", false},
		{"application/problem+json", true},
		{"*/*", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		if tt.accept != "" {
			r.Header.Set("Accept", tt.accept)
		}
		if got := AcceptsJSON(r); got != tt.want {
			t.Errorf("AcceptsJSON(%q) = %v, want %v", tt.accept, got, tt.want)
		}
	}
}
