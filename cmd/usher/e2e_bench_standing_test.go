package main

import (
	"encoding/json"
	"testing"
)

// TestE2EBenchStanding: usher bench --self --scenario standing-room with
// two small steps against usher in its own process. Every waiter checks in
// when its answers say (the check-ins a second lie between one per
// max_refresh_interval and one a second per waiter: a generator ignoring
// the intervals would send far more), over connections kept alive (none
// opened during a step), with no errors; the p99 from each check-in's
// scheduled moment is never below the p99 from its sending.
func TestE2EBenchStanding(t *testing.T) {
	code, out, errs := runMain(t, "bench", "--self", "--scenario", "standing-room", "--refresh", "2s",
		"--max-refresh", "8s", "--steps", "1000,3000", "--bound", "1s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r StandingResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(r.Steps) != 2 || r.Steps[0].Waiters != 1000 || r.Steps[1].Waiters != 3000 {
		t.Fatalf("steps %+v, want 1,000 and 3,000 waiters", r.Steps)
	}
	for _, s := range r.Steps {
		t.Logf("%d waiters: %.0f check-ins/s (peak %d), p50 %.2f ms, p99 %.2f ms, from schedule %.2f ms, late p99 %.2f ms, usher %.0f us, generator %.0f us a check-in, usher RSS %.1f MB",
			s.Waiters, s.CheckInsPerS, s.PeakPerS, s.P50ms, s.P99ms, s.SchedP99ms, s.LateP99ms, s.UsherCPUus, s.GeneratorCPUus, s.RSSMB)
		n := float64(s.Waiters)
		// Slowest: every waiter at max_refresh_interval plus its jitter
		// (a tenth), rounding and the page's slack; fastest: once a second.
		if low := 0.8 * n / (8*1.1 + 1.2); s.CheckInsPerS < low || s.CheckInsPerS > n {
			t.Errorf("%d waiters: %.0f check-ins a second, want %.0f to %.0f", s.Waiters, s.CheckInsPerS, low, n)
		}
		// No waiter is due twice in a second (its interval is at least
		// 1 s plus the page's slack), and the busiest second holds at
		// least its share.
		if s.PeakPerS > s.Waiters || float64(s.PeakPerS) < 0.5*s.CheckInsPerS {
			t.Errorf("%d waiters: %d check-ins due in the busiest second, %.0f a second on average", s.Waiters, s.PeakPerS, s.CheckInsPerS)
		}
		if s.Errors != 0 || s.Connections != 0 {
			t.Errorf("%d waiters: %d errors, %d connections opened during the step; want none", s.Waiters, s.Errors, s.Connections)
		}
		if !(s.P50ms > 0 && s.P50ms <= s.P99ms && s.P99ms <= s.SchedP99ms) {
			t.Errorf("%d waiters: p50 %v, p99 %v, p99 from schedule %v ms: want 0 < p50 <= p99 <= p99 from schedule", s.Waiters, s.P50ms, s.P99ms, s.SchedP99ms)
		}
		if s.RSSMB <= 0 || s.UsherCPUus <= 0 || s.GeneratorCPUus <= 0 {
			t.Errorf("%d waiters: RSS %v MB, usher %v us, generator %v us: not measured", s.Waiters, s.RSSMB, s.UsherCPUus, s.GeneratorCPUus)
		}
	}
}

// TestE2EBenchStandingReference: --reference puts a static server in
// usher's place, giving the intervals usher gives; the same generator
// follows them (check-ins a second within the same bounds), with no
// errors and no connection opened during the step.
func TestE2EBenchStandingReference(t *testing.T) {
	code, out, errs := runMain(t, "bench", "--self", "--scenario", "standing-room", "--refresh", "2s",
		"--max-refresh", "8s", "--steps", "3000", "--bound", "1s", "--reference", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r StandingResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !r.Reference || len(r.Steps) != 1 {
		t.Fatalf("reference %v, %d steps", r.Reference, len(r.Steps))
	}
	s := r.Steps[0]
	t.Logf("reference, %d waiters: %.0f check-ins/s (peak %d), p50 %.2f ms, p99 %.2f ms, from schedule %.2f ms, server %.0f us, generator %.0f us a check-in",
		s.Waiters, s.CheckInsPerS, s.PeakPerS, s.P50ms, s.P99ms, s.SchedP99ms, s.UsherCPUus, s.GeneratorCPUus)
	// Intervals of 2 s doubling to 8 s (a tenth either way), the page's
	// slack: between one per 9.2 s and one per 2 s a waiter.
	if n := float64(s.Waiters); s.CheckInsPerS < 0.8*n/9.2 || s.CheckInsPerS > n/1.5 {
		t.Errorf("%.0f check-ins a second from %d waiters", s.CheckInsPerS, s.Waiters)
	}
	if s.Errors != 0 || s.Connections != 0 || s.Admitted != 0 {
		t.Errorf("%d errors, %d connections opened, %d admitted; want none", s.Errors, s.Connections, s.Admitted)
	}
}
