package bench

import (
	"testing"
	"time"
)

// TestSessionsAfterLongPause: a request after the session ended is a new
// admission, as usher decides it: the gap counts as free and the new
// session counts in the rate.
func TestSessionsAfterLongPause(t *testing.T) {
	lim := Limits{TotalActiveUsers: 1, NewUsersPerMinute: 10, SessionDuration: 10 * time.Second}
	requeued := admitted("c", 0, 0, 0, 5, 40)
	requeued.Requeued, requeued.RequeuedAt, requeued.Requeues = 1, at(20), ats(20)
	for _, c := range []struct {
		name    string
		v       Visitor
		renewal bool
		want    [][2]float64 // sessions [start, end)
	}{
		{"pauses shorter than the session", admitted("a", 0, 0, 0, 5, 14, 23), true, [][2]float64{{0, 33}}},
		{"a pause longer than the session", admitted("a", 0, 0, 0, 5, 20, 25), true, [][2]float64{{0, 15}, {20, 35}}},
		{"the request at the end", admitted("a", 0, 0, 0, 5, 15), true, [][2]float64{{0, 15}, {15, 25}}},
		{"without renewal", admitted("a", 0, 0, 0, 5, 9.5, 12), false, [][2]float64{{0, 10}, {12, 22}}},
		{"requeued after the end, admitted again", requeued, true, [][2]float64{{0, 15}, {40, 50}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			lim := lim
			lim.DisableSessionRenewal = !c.renewal
			got := sessions(&c.v, lim, true)
			if len(got) != len(c.want) {
				t.Fatalf("sessions %v, want %v", got, c.want)
			}
			for i, w := range c.want {
				if got[i].start != at(w[0]).UnixNano() || got[i].end != at(w[1]).UnixNano() {
					t.Errorf("session %d = [%v, %v), want [%v, %v)", i, time.Unix(0, got[i].start), time.Unix(0, got[i].end), at(w[0]), at(w[1]))
				}
			}
			// Nobody holds a place between the sessions; each admission
			// counts in the rate.
			tl := &Timeline{Start: at(0), End: at(60), Visitors: []Visitor{c.v}}
			ix := newIndex(tl, lim)
			for i := 1; i < len(c.want); i++ {
				gap := (c.want[i-1][1] + c.want[i][0]) / 2
				if c.want[i-1][1] < c.want[i][0] && ix.active(at(gap).UnixNano()) != 0 {
					t.Errorf("active at %vs, between two sessions", gap)
				}
			}
			if len(c.v.Requeues) > 0 && (ix.waiting(at(30).UnixNano()) != 1 || ix.waiting(at(40).UnixNano()) != 0) {
				t.Errorf("back in line from 20 s to 40 s: waiting %d at 30 s, %d at 40 s; want 1 and 0", ix.waiting(at(30).UnixNano()), ix.waiting(at(40).UnixNano()))
			}
			res := Report(tl, lim)
			if res.MaxActive != 1 || res.RequeuedWhileBrowsing != 0 || res.MaxRate != len(c.want) {
				t.Errorf("MaxActive %d, RequeuedWhileBrowsing %d, MaxRate %d, want 1, 0 and %d", res.MaxActive, res.RequeuedWhileBrowsing, res.MaxRate, len(c.want))
			}
		})
	}
}
