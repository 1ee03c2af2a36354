package gate

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestAuthCacheSeconds: a forward-auth answer is marked reusable only for
// an admitted visitor whose ticket did not change, and never past the
// moment usher's own answer would change (the session's renewal or end)
// nor past AuthCacheMax, counting the second nginx may add.
func TestAuthCacheSeconds(t *testing.T) {
	now := time.Unix(1_800_000_000, 250_000_000)
	hour := usher.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Hour, RefreshInterval: 10 * time.Second}
	noRenew := hour
	noRenew.DisableSessionRenewal = true
	room := func(s usher.Settings) *usher.Room { return &usher.Room{ID: "r", Settings: s} }
	admitted := func(until time.Time) usher.Ticket {
		return usher.Ticket{State: usher.Admitted, AdmittedAt: now.Add(-time.Minute), CountedAt: now.Add(-time.Second), Until: until}
	}
	// An hour's session renews when now + 1 h passes Until (usher.Room.Session).
	fresh := usher.SessionUntil(&hour, now.Add(-time.Second)) // renewed a second ago: due in about 9 s
	for _, tc := range []struct {
		name string
		s    usher.Settings
		d    usher.Decision
		want int
	}{
		{"admitted, renewed a second ago: the cap", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(fresh)}, 4},
		{"admitted, renewal due in 2.7 s: 1", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(now.Add(time.Hour + 2700*time.Millisecond))}, 1},
		{"admitted, renewal due in 1.9 s: none", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(now.Add(time.Hour + 1900*time.Millisecond))}, 0},
		{"admitted, renewal due in 0.9 s: none", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(now.Add(time.Hour + 900*time.Millisecond))}, 0},
		{"admitted, renewal due now: none", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(now.Add(time.Hour - time.Second))}, 0},
		{"no renewal, session ends in 3.5 s: 2", noRenew, usher.Decision{Outcome: usher.Admit, Ticket: usher.Ticket{State: usher.Admitted,
			AdmittedAt: now.Add(-time.Hour + 3500*time.Millisecond), CountedAt: now.Add(-time.Hour), Until: now.Add(time.Hour)}}, 2},
		{"no renewal, a long session left: the cap", noRenew, usher.Decision{Outcome: usher.Admit, Ticket: usher.Ticket{State: usher.Admitted,
			AdmittedAt: now.Add(-time.Minute), CountedAt: now.Add(-time.Minute), Until: now.Add(time.Hour)}}, 4},
		{"session ended", noRenew, usher.Decision{Outcome: usher.Admit, Ticket: admitted(now.Add(-time.Second))}, 0},
		{"ticket changed (Set-Cookie)", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(fresh), TicketChanged: true}, 0},
		{"newly admitted", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(fresh), NewlyAdmitted: true}, 0},
		{"fail mode", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(fresh), Degraded: true}, 0},
		{"replay", hour, usher.Decision{Outcome: usher.Admit, Ticket: admitted(fresh), Replay: true}, 0},
		{"bypass rule (pass)", hour, usher.Decision{Outcome: usher.Pass, Ticket: admitted(fresh)}, 0},
		{"waiting", hour, usher.Decision{Outcome: usher.Wait}, 0},
		{"a waiting ticket marked admit", hour, usher.Decision{Outcome: usher.Admit, Ticket: usher.Ticket{State: usher.Waiting}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.d.Settings = tc.s
			m := Match{Room: room(tc.s), At: now}
			if got := authCacheSeconds(m, tc.d); got != tc.want {
				t.Fatalf("authCacheSeconds = %d, want %d", got, tc.want)
			}
			w := httptest.NewRecorder()
			setAuthCache(w, m, tc.d)
			if h := w.Header().Get(AuthCacheHeader); (h != "") != (tc.want > 0) {
				t.Fatalf("header %q with %d s", h, tc.want)
			}
		})
	}
	if got := authCacheSeconds(Match{At: now}, usher.Decision{Outcome: usher.Admit}); got != 0 {
		t.Fatalf("no room: %d", got)
	}
}
