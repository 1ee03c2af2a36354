package gate_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/gate"
)

// TestCountryHeaderTrustedOnly is attack 6: a client that sends the
// country header itself matches no country rule; the same header from a
// trusted proxy does. (featureGate trusts 192.0.2.0/24.)
func TestCountryHeaderTrustedOnly(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	room := testRoom("sale")
	room.TotalActiveUsers = 1
	room.Rules = []usher.Rule{{Description: "local", Expression: `country == "NZ"`, Action: "bypass_waiting_room", Enabled: true}}
	g, _ := featureGate(t, room, now, func(o *gate.Options) { o.CountryHeader = "CF-IPCountry" })
	// Fill the room so that only a bypass gets to the origin.
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil))
	for _, tc := range []struct {
		peer   string
		bypass bool
	}{
		{"198.51.100.9:1234", false}, // the visitor itself
		{"[2001:db8::9]:1234", false},
		{"192.0.2.10:1234", true}, // the trusted proxy
	} {
		r := httptest.NewRequest("GET", "http://shop.test/", nil)
		r.RemoteAddr = tc.peer
		r.Header.Set("CF-IPCountry", "NZ")
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, r)
		if got := rec.Header().Get("X-Origin") == "1"; got != tc.bypass {
			t.Errorf("country header from %s: reached the origin %v, want %v", tc.peer, got, tc.bypass)
		}
	}
}
