package server

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestRequestID(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	tests := []struct {
		name, remote, sent string
		keep               bool
	}{
		{name: "trusted well-formed kept", remote: "10.0.0.1:1", sent: "abc-123_x.y", keep: true},
		{name: "untrusted replaced", remote: "192.0.2.1:1", sent: "abc-123"},
		{name: "trusted malformed replaced", remote: "10.0.0.1:1", sent: "bad id\r\n"},
		{name: "too long replaced", remote: "10.0.0.1:1", sent: string(make([]byte, 129))},
		{name: "missing generated", remote: "10.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var seen, fromHeader string
			h := RequestID(trusted, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				seen = RequestIDFrom(r.Context())
				fromHeader = r.Header.Get(RequestIDHeader)
			}))
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			if tt.sent != "" {
				r.Header.Set(RequestIDHeader, tt.sent)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if tt.keep && seen != tt.sent {
				t.Errorf("id = %q, want %q kept", seen, tt.sent)
			}
			if !tt.keep && (seen == tt.sent || !validRequestID(seen) || len(seen) != 26) {
				t.Errorf("id = %q, want a new one", seen)
			}
			if fromHeader != seen || w.Header().Get(RequestIDHeader) != seen {
				t.Errorf("request header %q, response header %q, context %q", fromHeader, w.Header().Get(RequestIDHeader), seen)
			}
		})
	}
	if RequestIDFrom(httptest.NewRequest("GET", "/", nil).Context()) != "" {
		t.Error("RequestIDFrom without middleware not empty")
	}
}
