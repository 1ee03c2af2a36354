package bench_test

import (
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// TestSimulatePauses: visitors who pause shorter and longer than their
// session, on simulated time. Past its session a visitor is a new visitor
// to usher: admitted again at once when the room has room, queued again
// when it is full; either way the report measures the limits as the
// engine holds them (the room of 20 with 1 min sessions and a request
// every 2 min read "at most 27 active of 20" when the simulator counted a
// session through the pause).
func TestSimulatePauses(t *testing.T) {
	for _, c := range []struct {
		name     string
		arrivals string
		every    string
		requeued bool // some visitors are queued again
		again    bool // some visitors are admitted again
	}{
		{"shorter, full room", "flash:200@1m", "20s-40s", false, false},
		{"longer, full room", "flash:200@1m", "2m", true, true},
		{"longer, free room", "flash:10@1s", "2m", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			room := simRoom(20, 200, time.Minute, 20*time.Second)
			tl := simulate(t, bench.SimConfig{
				Room:     room,
				Arrivals: arrivals(t, c.arrivals),
				Model:    bench.VisitorModel{Browse: bench.MustDist("6m"), RequestEvery: bench.MustDist(c.every)},
				Seed:     1,
			})
			lim := bench.RoomLimits(&room)
			res := bench.Report(tl, lim)
			if res.MaxActive > 20 || res.MaxRate > 200 || res.RequeuedWhileBrowsing != 0 || res.Unfinished != 0 {
				t.Errorf("max_active %d of 20, max_rate %d of 200, requeued while browsing %d, unfinished %d",
					res.MaxActive, res.MaxRate, res.RequeuedWhileBrowsing, res.Unfinished)
			}
			requeued, again := 0, 0
			for _, v := range tl.Visitors {
				if v.Requeued > 0 {
					requeued++
				}
				for i := 1; i < len(v.Requests); i++ {
					// A request a session or more after the one before it
					// was admitted anew.
					if v.Requests[i].Sub(v.Requests[i-1]) >= time.Minute {
						again++
						break
					}
				}
			}
			if (requeued > 0) != c.requeued || (again > 0) != c.again {
				t.Errorf("%d visitors queued again, %d admitted again; want some: %v, %v", requeued, again, c.requeued, c.again)
			}
			if c.name == "longer, free room" {
				// Between the sessions (they end at 1:01, the next requests
				// come at 2:00) nobody holds a place.
				for _, s := range bench.Series(tl, lim, time.Second) {
					if s.T > 62*time.Second && s.T < 119*time.Second && s.Active != 0 {
						t.Fatalf("%d active at %v, between the sessions", s.Active, s.T)
					}
				}
			}
		})
	}
}
