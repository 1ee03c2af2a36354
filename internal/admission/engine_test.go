package admission

import (
	"sort"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func simRoom() usher.Room {
	return usher.Room{
		ID:   "sale",
		Name: "Sale",
		Settings: usher.Settings{
			TotalActiveUsers:  20,
			NewUsersPerMinute: 60,
			SessionDuration:   15 * time.Second,
			RefreshInterval:   2 * time.Second,
			QueueingMethod:    usher.FIFO,
		},
	}
}

// maxIn60 returns the most admissions in any 60 s window.
func maxIn60(ts []time.Time) int {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Before(ts[j]) })
	best, lo := 0, 0
	for hi := range ts {
		for ts[hi].Sub(ts[lo]) >= time.Minute {
			lo++
		}
		best = max(best, hi-lo+1)
	}
	return best
}

func TestSimulationInvariants(t *testing.T) {
	cases := []struct {
		name string
		cfg  simConfig
	}{
		{"flash crowd, concurrency bound", simConfig{
			visitors: 300, arrivalSpan: 10 * time.Second, abandonFrac: 0.2,
			browseMin: 5 * time.Second, browseMax: 20 * time.Second, horizon: 15 * time.Minute,
		}},
		{"rate bound", simConfig{
			visitors: 300, arrivalSpan: 30 * time.Second, abandonFrac: 0.2,
			browseMin: 1 * time.Second, browseMax: 3 * time.Second, horizon: 15 * time.Minute,
			room: func() usher.Room { r := simRoom(); r.TotalActiveUsers = 200; r.NewUsersPerMinute = 40; return r }(),
		}},
		{"renewal disabled", simConfig{
			visitors: 200, arrivalSpan: 5 * time.Second, abandonFrac: 0.3,
			browseMin: 5 * time.Second, browseMax: 40 * time.Second, horizon: 15 * time.Minute,
			room: func() usher.Room { r := simRoom(); r.DisableSessionRenewal = true; return r }(),
		}},
		{"slow refresh", simConfig{
			visitors: 400, arrivalSpan: 60 * time.Second, abandonFrac: 0.2,
			browseMin: 10 * time.Second, browseMax: 60 * time.Second, horizon: 30 * time.Minute,
			room: func() usher.Room {
				r := simRoom()
				r.TotalActiveUsers, r.RefreshInterval, r.SessionDuration = 50, 20*time.Second, time.Minute
				return r
			}(),
		}},
	}
	for _, tc := range cases {
		for seed := uint64(1); seed <= 5; seed++ {
			cfg := tc.cfg
			cfg.seed = seed
			if cfg.room.ID == "" {
				cfg.room = simRoom()
			}
			s := cfg.room.Settings
			t.Run(tc.name, func(t *testing.T) {
				res := runSim(t, cfg)
				if res.maxActive > s.TotalActiveUsers {
					t.Errorf("seed %d: active reached %d, limit %d", seed, res.maxActive, s.TotalActiveUsers)
				}
				if got := maxIn60(res.admissions); got > s.NewUsersPerMinute {
					t.Errorf("seed %d: %d admissions in 60 s, limit %d", seed, got, s.NewUsersPerMinute)
				}
				if res.inversions > 0 {
					t.Errorf("seed %d: %d FIFO inversions", seed, res.inversions)
				}
				if res.requeued > 0 {
					t.Errorf("seed %d: %d visitors re-queued during their session", seed, res.requeued)
				}
				if res.revived > 0 {
					t.Errorf("seed %d: %d ended sessions let in again without an admission", seed, res.revived)
				}
				if res.earlyQueued > 0 {
					t.Errorf("seed %d: %d new visitors queued with free slots and nobody waiting", seed, res.earlyQueued)
				}
				if res.queueSamples == 0 {
					t.Fatalf("seed %d: no queue formed; the scenario tests nothing", seed)
				}
				t.Logf("seed %d: admitted %d, max active %d/%d, max rate %d/%d, utilisation %.3f",
					seed, res.admittedCount, res.maxActive, s.TotalActiveUsers,
					maxIn60(res.admissions), s.NewUsersPerMinute, res.utilization)
			})
		}
	}
}
