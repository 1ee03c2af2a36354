package bench

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
)

// apScenario is a room in front of the simulated origin of the autopilot
// comparison: 20 workers of 80-120 ms (200 requests a second), visitors
// who browse 1-3 minutes with a request every 5 s on average (0.2 a
// second), so about 800 active visitors keep the origin at 80 %.
func apOrigin() OriginModel {
	return OriginModel{Workers: 20, Service: Uniform(80*time.Millisecond, 120*time.Millisecond), Timeout: 5 * time.Second}
}

func apModel() VisitorModel {
	return VisitorModel{Browse: Uniform(time.Minute, 3*time.Minute), RequestEvery: Exp(5 * time.Second)}
}

func apRoom(conc, rate int, a usher.Autopilot) usher.Room {
	return usher.Room{ID: "sale", Settings: usher.Settings{
		TotalActiveUsers: conc, NewUsersPerMinute: rate, SessionDuration: 5 * time.Minute,
		RefreshInterval: 10 * time.Second, Autopilot: a,
	}}
}

// runAP simulates room in front of apOrigin with a flash crowd of 8,000.
func runAP(t *testing.T, room usher.Room, seed uint64, horizon time.Duration) (*Timeline, Result) {
	t.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arr, err := ParseArrivals("flash:8000@1m")
	if err != nil {
		t.Fatal(err)
	}
	tl, err := Simulate(context.Background(), SimConfig{Room: room, Arrivals: arr, Model: apModel(), Seed: seed,
		Store: st, Compact: true, Origin: apOrigin(), Horizon: horizon})
	if err != nil {
		t.Fatal(err)
	}
	return tl, Report(tl, RoomLimits(&room))
}

// TestSimulateAutopilotTooHigh: limits 3x too high for the origin. With
// fixed limits the origin's p99 goes far past twice its healthy p99 and
// requests time out; with autopilot (the rate governed, defaults) the p99
// stays within twice the healthy p99 and errors under 1 %, on every seed.
func TestSimulateAutopilotTooHigh(t *testing.T) {
	if testing.Short() {
		t.Skip("a few simulated hours")
	}
	for seed := uint64(1); seed <= 2; seed++ {
		tlF, fixed := runAP(t, apRoom(2400, 1200, usher.Autopilot{}), seed, time.Hour)
		tlA, auto := runAP(t, apRoom(2400, 1200, usher.Autopilot{Enabled: true}), seed, time.Hour)
		f, a := tlF.Origin, tlA.Origin
		t.Logf("seed %d: fixed p99 %.0f ms (healthy %.0f), errors %.2f %%, drained at %.0f s; autopilot p99 %.0f ms, errors %.2f %%, drained at %.0f s, %d changes",
			seed, f.P99Ms, f.HealthyP99Ms, 100*f.ErrorRate, fixed.QueueDrainedS, a.P99Ms, 100*a.ErrorRate, auto.QueueDrainedS, a.Changes)
		if f.P99Ms <= 2*f.HealthyP99Ms && f.ErrorRate < 0.01 {
			t.Errorf("seed %d: the fixed limits kept the origin healthy: the scenario shows nothing", seed)
		}
		if a.P99Ms > 2*a.HealthyP99Ms || a.ErrorRate >= 0.01 {
			t.Errorf("seed %d: autopilot: p99 %.0f ms (healthy %.0f), errors %.2f %%; want within 2x and under 1 %%", seed, a.P99Ms, a.HealthyP99Ms, 100*a.ErrorRate)
		}
		if !auto.QueueDrained {
			t.Errorf("seed %d: autopilot did not drain the line within the hour", seed)
		}
		if n := float64(a.Changes) / (float64(len(a.Seconds)) / 60); n > 2*6 {
			t.Errorf("seed %d: %.1f changes a minute, over the caps of 6 increases and 6 decreases", seed, n)
		}
	}
}

// TestSimulateAutopilotTooLow: limits 3x too low. Autopilot, with a
// ceiling above them, drains the line faster than the fixed limits, and
// keeps the origin healthy.
func TestSimulateAutopilotTooLow(t *testing.T) {
	if testing.Short() {
		t.Skip("a few simulated hours")
	}
	for seed := uint64(1); seed <= 1; seed++ {
		_, fixed := runAP(t, apRoom(270, 135, usher.Autopilot{}), seed, time.Hour)
		tlA, auto := runAP(t, apRoom(270, 135, usher.Autopilot{Enabled: true, Concurrency: true,
			MaxTotalActiveUsers: 1200, MaxNewUsersPerMinute: 600}), seed, time.Hour)
		a := tlA.Origin
		t.Logf("seed %d: fixed drained %v at %.0f s, wait p50 %.0f s; autopilot drained %v at %.0f s, wait p50 %.0f s, p99 %.0f ms (healthy %.0f)",
			seed, fixed.QueueDrained, fixed.QueueDrainedS, fixed.WaitP50S, auto.QueueDrained, auto.QueueDrainedS, auto.WaitP50S, a.P99Ms, a.HealthyP99Ms)
		if !auto.QueueDrained || (fixed.QueueDrained && fixed.QueueDrainedS <= auto.QueueDrainedS) {
			t.Errorf("seed %d: autopilot drained %v at %.0f s, fixed %v at %.0f s; want autopilot first", seed,
				auto.QueueDrained, auto.QueueDrainedS, fixed.QueueDrained, fixed.QueueDrainedS)
		}
		if auto.WaitP50S >= fixed.WaitP50S {
			t.Errorf("seed %d: median wait %.0f s with autopilot, %.0f s fixed", seed, auto.WaitP50S, fixed.WaitP50S)
		}
		if a.P99Ms > 2*a.HealthyP99Ms || a.ErrorRate >= 0.01 {
			t.Errorf("seed %d: autopilot: p99 %.0f ms (healthy %.0f), errors %.2f %%", seed, a.P99Ms, a.HealthyP99Ms, 100*a.ErrorRate)
		}
	}
}

// TestSimulateAutopilotLiveScenario: usher bench --scenario autopilot's
// default scenario on simulated time, without the machine's noise: an
// origin of 10 workers at 160-240 ms (1 s timeout), 200 visitors in 10 s
// who browse 20-40 s with a request every 2 s, session_duration 10s,
// refresh_interval 2s; limits 3x too high and 3x too low (the latter with
// the configured limits as floors and ceilings of 1.5x what the origin
// sustains), over the bench's 3 minutes, on three seeds. Limits 3x too
// high: the fixed limits overload the origin, autopilot keeps its p99
// within twice the healthy one with no errors; 3x too low: autopilot
// drains the line within the 3 minutes, the fixed limits do not.
func TestSimulateAutopilotLiveScenario(t *testing.T) {
	origin := OriginModel{Workers: 10, Service: Uniform(160*time.Millisecond, 240*time.Millisecond), Timeout: time.Second}
	model := VisitorModel{Browse: Uniform(20*time.Second, 40*time.Second), RequestEvery: Exp(2 * time.Second)}
	arr, err := ParseArrivals("flash:200@10s")
	if err != nil {
		t.Fatal(err)
	}
	room := func(conc, rate int, a usher.Autopilot) usher.Room {
		return usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: conc, NewUsersPerMinute: rate,
			SessionDuration: 10 * time.Second, RefreshInterval: 2 * time.Second, Autopilot: a}}
	}
	run := func(r usher.Room, seed uint64) (*OriginStats, Result) {
		t.Helper()
		st, err := local.Open(local.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tl, err := Simulate(context.Background(), SimConfig{Room: r, Arrivals: arr, Model: model, Seed: seed,
			Store: st, Compact: true, Origin: origin, Horizon: 3 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return tl.Origin, Report(tl, RoomLimits(&r))
	}
	for seed := uint64(1); seed <= 3; seed++ {
		f, _ := run(room(264, 528, usher.Autopilot{}), seed)
		a, ra := run(room(264, 528, usher.Autopilot{Enabled: true, BaselineSamples: 10}), seed)
		t.Logf("seed %d, 3x too high: fixed p99 %.2fx, errors %.2f %%; autopilot p99 %.2fx, errors %.2f %%, drained %v at %.0f s",
			seed, f.P99Ms/f.HealthyP99Ms, 100*f.ErrorRate, a.P99Ms/a.HealthyP99Ms, 100*a.ErrorRate, ra.QueueDrained, ra.QueueDrainedS)
		if f.P99Ms <= 2*f.HealthyP99Ms && f.ErrorRate < 0.01 {
			t.Errorf("seed %d: the fixed limits 3x too high kept the origin healthy", seed)
		}
		if a.P99Ms > 2*a.HealthyP99Ms || a.ErrorRate >= 0.01 {
			t.Errorf("seed %d, 3x too high: autopilot p99 %.0f ms (healthy %.0f), errors %.2f %%", seed, a.P99Ms, a.HealthyP99Ms, 100*a.ErrorRate)
		}
		_, rf := run(room(29, 58, usher.Autopilot{}), seed)
		a, ra = run(room(29, 58, usher.Autopilot{Enabled: true, BaselineSamples: 10, Concurrency: true,
			MinTotalActiveUsers: 29, MinNewUsersPerMinute: 58, MaxTotalActiveUsers: 132, MaxNewUsersPerMinute: 264}), seed)
		t.Logf("seed %d, 3x too low: fixed let %d in, drained %v; autopilot drained %v at %.0f s, p99 %.2fx, errors %.2f %%",
			seed, rf.Admitted, rf.QueueDrained, ra.QueueDrained, ra.QueueDrainedS, a.P99Ms/a.HealthyP99Ms, 100*a.ErrorRate)
		if !ra.QueueDrained || rf.QueueDrained {
			t.Errorf("seed %d, 3x too low: autopilot drained %v, fixed %v; want autopilot only", seed, ra.QueueDrained, rf.QueueDrained)
		}
		if a.P99Ms > 2*a.HealthyP99Ms || a.ErrorRate >= 0.01 {
			t.Errorf("seed %d, 3x too low: autopilot p99 %.0f ms (healthy %.0f), errors %.2f %%", seed, a.P99Ms, a.HealthyP99Ms, 100*a.ErrorRate)
		}
	}
}
