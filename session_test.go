package usher

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestSessionCountedToItsEnd: whatever the requests' timing, a renewable
// session is counted at least session_duration after the visitor's latest
// request and less than a renewal step (and the second it is rounded up
// to) more; a session of up to a minute exactly to the second its latest
// request's session_duration ends in, so that it holds no place after it
// ended. Renewals come at most once a step less a second, and each moves
// the end by a second or more.
func TestSessionCountedToItsEnd(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, session := range []time.Duration{10 * time.Second, 15 * time.Second, time.Minute, 2 * time.Minute, 10 * time.Minute, time.Hour} {
		rng := rand.New(rand.NewPCG(uint64(session), 1))
		room := Room{ID: "r", Settings: Settings{TotalActiveUsers: 1, NewUsersPerMinute: 1, SessionDuration: session, RefreshInterval: 2 * time.Second}}
		step := RenewStep(session)
		now := t0.Add(time.Duration(rng.Int64N(1000)) * time.Millisecond)
		tk := Ticket{State: Admitted, AdmittedAt: now, CountedAt: now, Until: SessionUntil(&room.Settings, now)}
		lastRenewal := now
		for range 2000 {
			// Requests from 1 ms to a bit under a session apart.
			now = now.Add(time.Duration(1+rng.Int64N(int64(session/time.Millisecond)-1)) * time.Millisecond / time.Duration(1+rng.IntN(50)))
			ses := room.Session(&tk, now)
			if !ses.Valid {
				t.Fatalf("session %v: a request %v after the last one found the session ended", session, now.Sub(lastRenewal))
			}
			if !ses.RenewTo.IsZero() {
				if gap := now.Sub(lastRenewal); gap <= step-time.Second {
					t.Fatalf("session %v: renewed %v after the last renewal, want more than %v", session, gap, step-time.Second)
				}
				if ses.RenewTo.Sub(tk.Until) < time.Second {
					t.Fatalf("session %v: a renewal moved the end by %v", session, ses.RenewTo.Sub(tk.Until))
				}
				tk.Until, tk.CountedAt, lastRenewal = ses.RenewTo, now, now
			}
			end := room.Session(&tk, now).End
			if end.Before(now.Add(session)) {
				t.Fatalf("session %v: counted to %v, before the request's end %v", session, end, now.Add(session))
			}
			if most := CeilSecond(now.Add(session + step - time.Second)); end.After(most) {
				t.Fatalf("session %v: counted to %v, after %v", session, end, most)
			}
			if step == time.Second && !end.Equal(CeilSecond(now.Add(session))) {
				t.Fatalf("session %v: counted to %v, want the second its end falls in, %v", session, end, CeilSecond(now.Add(session)))
			}
		}
	}
}
