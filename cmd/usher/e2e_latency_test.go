package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// latencyConfig is multiConfig with a 2 s timeout and an admin listener
// (for the metrics).
const latencyConfig = `listen: %s
admin:
  listen: %s
  token: %s
store:
  redis:
    addrs: [%s]
    fail_mode: closed
    timeout: 2s
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: %s
    routes:
      - path: /
    total_active_users: 20
    new_users_per_minute: 60
    session_duration: 15s
    queueing_method: fifo
    refresh_interval: 2s
    json_response_enabled: true
`

// latencyNodes is three usher nodes on one redis-server through a
// latency-injecting proxy, and a balancer in front.
type latencyNodes struct {
	*cluster
	px     *redistest.Proxy
	admins []string
}

// startLatencyNodes starts three nodes on a real redis-server behind a
// toxiproxy proxy (no fault yet).
func startLatencyNodes(t *testing.T) *latencyNodes {
	t.Helper()
	rd := redistest.StartServer(t)
	ln := &latencyNodes{cluster: &cluster{}, px: redistest.StartProxy(t, rd.Addr())}
	origin := httptest.NewServer(bench.NewOrigin("slow redis shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	for i := range 3 {
		addr, admin := freeAddr(t), freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(latencyConfig, addr, admin, advToken, ln.px.Addr(), origin.URL)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		ln.nodes = append(ln.nodes, startUsher(t, path, addr, "sale"))
		ln.configs, ln.addrs = append(ln.configs, path), append(ln.addrs, addr)
		ln.admins = append(ln.admins, admin)
	}
	ln.lb = newBalancer(ln.addrs)
	t.Cleanup(ln.lb.Close)
	return ln
}

// metric returns a metric's value on each node (summed over its labels);
// an error when a node does not answer or lacks it. Safe from any
// goroutine.
func (ln *latencyNodes) metric(name string) ([]float64, error) {
	out := make([]float64, len(ln.admins))
	for i, admin := range ln.admins {
		body, err := (&advNode{admin: admin}).adminGet("/metrics")
		if err != nil {
			return nil, fmt.Errorf("node %d: %w", i, err)
		}
		found := false
		for line := range strings.SplitSeq(body, "\n") {
			metric, value, ok := strings.Cut(line, " ")
			if base, _, _ := strings.Cut(metric, "{"); !ok || base != name {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				return nil, fmt.Errorf("node %d: %s: %q", i, name, line)
			}
			out[i] += v
			found = true
		}
		if !found {
			return nil, fmt.Errorf("node %d: no metric %s", i, name)
		}
	}
	return out, nil
}

// mustMetric is metric, failing the test on an error.
func (ln *latencyNodes) mustMetric(t *testing.T, name string) []float64 {
	t.Helper()
	v, err := ln.metric(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// logStoreHealth logs what each node's store calls came to.
func (ln *latencyNodes) logStoreHealth(t *testing.T) map[string][]float64 {
	t.Helper()
	out := map[string][]float64{}
	for _, name := range []string{"usher_store_errors_total", "usher_failmode_decisions_total",
		"usher_checkins_lapsed_total", "usher_renewals_late_total", "usher_lost_answers_total"} {
		out[name] = ln.mustMetric(t, name)
		t.Logf("%s per node: %v", name, out[name])
	}
	return out
}

// sumNodes is the sum of a metric over the nodes.
func sumNodes(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s
}

// TestE2ERedisLatencyBelowTimeout runs the flash crowd through three
// nodes whose every Redis reply comes 1 s late (a toxiproxy latency
// toxic between the nodes and a real redis-server), under a 2 s timeout:
// slow is not down (issue 23, item 4). No call fails, so the fail mode
// never answers; no waiter's count lapses because its answer came late,
// so nobody is passed by a later arrival; the limits hold and nobody
// browsing is sent back to the line.
//
// It failed before two fixes (2026-11-29, loaded 2-core machine): 2 FIFO
// inversions, max active 21 of 20, 23 first answers without a wait. A
// script the server did not have yet took two round trips (EVALSHA, then
// EVAL) under one 2 s timeout, so every node's first admissions failed
// and opened its breaker; and a page waited its refresh from the late
// answer, a second into its count's grace.
func TestE2ERedisLatencyBelowTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	// Not parallel: the test is about time (a round trip of 1 s under a
	// 2 s timeout, a page's refresh against its grace), and a node starved
	// of the CPU by a dozen other end-to-end tests would answer late for
	// reasons of its own.
	// USHER_E2E_LATENCY measures another latency below the timeout (the
	// suite runs 1 s; docs/scaling.md gives 100 ms too).
	latency := time.Second
	if v := os.Getenv("USHER_E2E_LATENCY"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d >= 2*time.Second {
			t.Fatalf("USHER_E2E_LATENCY=%q: want a duration from 0 to below the 2 s timeout", v)
		}
		latency = d
	}
	ln := startLatencyNodes(t)
	ln.px.Latency(latency)
	t.Logf("every Redis reply %v late", latency)
	tl, res := runCrowd(t, ln.cluster)
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s\nrequest errors: %v", js, tl.ErrorCounts())
	health := ln.logStoreHealth(t)
	if res.Admitted < 50 {
		t.Errorf("only %d admitted", res.Admitted)
	}
	if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 {
		t.Errorf("limits: active %d, %d admissions in 60 s", res.MaxActive, res.MaxRate)
	}
	if res.FIFOInversions != 0 {
		t.Errorf("%d FIFO inversions with replies %v late under a 2 s timeout", res.FIFOInversions, latency)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing", res.RequeuedWhileBrowsing)
	}
	if n := sumNodes(health["usher_failmode_decisions_total"]); n != 0 {
		t.Errorf("%v decisions by the fail mode with replies below the timeout: slow is not down", n)
	}
	if n := sumNodes(health["usher_checkins_lapsed_total"]); n != 0 {
		t.Errorf("%v check-ins found their waiting count lapsed", n)
	}
}

// lostAdmissionsBound is the most admissions in the busiest minute, by the
// visitors' clock, beyond new_users_per_minute in
// TestE2ERedisLatencyAboveTimeout: admissions Redis applied as the latency
// began whose answers were lost and delivered after the outage (measured:
// 0 or 1 in three runs).
const lostAdmissionsBound = 2

// TestE2ERedisLatencyAboveTimeout runs the flash crowd through three
// nodes and, 6 s into it, makes every Redis reply 5 s late for 20 s,
// above the 2 s timeout: the store is as good as down. The fail mode
// (closed) applies on every node alike: each node's breaker opens, nobody
// is admitted (new visitors and waiters get the waiting page), and the
// admitted keep their sessions. When the latency ends, every node uses
// the store again and the room is back within one session: admissions
// resume within session_duration and the line drains within the limits.
func TestE2ERedisLatencyAboveTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	// Not parallel, for the reason TestE2ERedisLatencyBelowTimeout gives:
	// the outage's windows and the recovery are measured by the clock.
	ln := startLatencyNodes(t)
	const (
		after   = 6 * time.Second
		latency = 5 * time.Second
		outage  = 20 * time.Second
		session = 15 * time.Second
		timeout = 2 * time.Second
	)
	type sample struct {
		start, end           time.Time
		upDuring, failDuring []float64
		err                  error
	}
	done := make(chan sample, 1)
	go func() {
		var s sample
		defer func() { done <- s }()
		time.Sleep(after)
		s.start = time.Now()
		ln.px.Latency(latency)
		// Well into the outage (every node's breaker has had its
		// failures), and early enough for the scrapes, whose room status
		// waits for the store's timeout, to end before the outage does.
		time.Sleep(outage / 3)
		if s.upDuring, s.err = ln.metric("usher_store_up"); s.err != nil {
			return
		}
		if s.failDuring, s.err = ln.metric("usher_failmode_decisions_total"); s.err != nil {
			return
		}
		time.Sleep(s.start.Add(outage).Sub(time.Now()))
		s.end = time.Now()
		ln.px.Clear()
	}()
	tl, res := runCrowd(t, ln.cluster)
	s := <-done
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s\nrequest errors: %v", js, tl.ErrorCounts())
	if s.err != nil {
		t.Fatalf("metrics during the outage: %v", s.err)
	}
	ln.logStoreHealth(t)
	t.Logf("during the outage: usher_store_up per node %v, fail-mode decisions so far %v", s.upDuring, s.failDuring)
	for i := range ln.admins {
		if s.upDuring[i] != 0 || s.failDuring[i] == 0 {
			t.Errorf("node %d during the outage: usher_store_up %v, %v fail-mode decisions: want the fail mode on every node",
				i, s.upDuring[i], s.failDuring[i])
		}
	}
	if up := ln.mustMetric(t, "usher_store_up"); sumNodes(up) != float64(len(up)) {
		t.Errorf("after the outage: usher_store_up per node %v, want every node back on the store", up)
	}

	// Nobody admitted by a request decided in the outage (a request sent
	// within the timeout before its end may have its answer flushed when
	// the latency is removed); the first admission after it within a
	// session.
	var during int
	first := time.Time{}
	for i := range tl.Visitors {
		v := &tl.Visitors[i]
		if v.Admitted.IsZero() {
			continue
		}
		sent := v.AdmittedSent
		if sent.IsZero() {
			sent = v.Admitted
		}
		if sent.After(s.start.Add(500*time.Millisecond)) && sent.Before(s.end.Add(-timeout-500*time.Millisecond)) {
			during++
		}
		if v.Admitted.After(s.end) && (first.IsZero() || v.Admitted.Before(first)) {
			first = v.Admitted
		}
	}
	t.Logf("outage %v to %v (%.1f s); first admission after it %.1f s after its end",
		s.start.Sub(tl.Start).Seconds(), s.end.Sub(tl.Start).Seconds(), s.end.Sub(s.start).Seconds(), first.Sub(s.end).Seconds())
	if during != 0 {
		t.Errorf("%d visitors admitted by a request sent during the outage (fail_mode closed)", during)
	}
	if first.IsZero() || first.Sub(s.end) > session {
		t.Errorf("first admission after the outage %v after its end, want within a session (%v)", first.Sub(s.end), session)
	}
	if res.Unfinished != 0 || !res.QueueDrained {
		t.Errorf("%d visitors unfinished, queue drained %v: the room did not recover", res.Unfinished, res.QueueDrained)
	}
	if res.MaxActiveRatio > 1 {
		t.Errorf("limits: active %d", res.MaxActive)
	}
	// Calls made as the latency began, before the breakers opened, were
	// applied by Redis and their answers lost: an admission among them is
	// delivered at the visitor's first check-in after the outage, and
	// counts in the store's rate window from when it was applied, not from
	// when the visitor went in. By the visitors' clock the busiest minute
	// can hold those few more (docs/scaling.md, Slow is not down).
	if lost := lostAdmissionsBound; res.MaxRate > e2eLimits.NewUsersPerMinute+lost {
		t.Errorf("limits: %d admissions in 60 s, over %d by more than the %d admissions whose answers an outage can lose",
			res.MaxRate, e2eLimits.NewUsersPerMinute, lost)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing: the admitted keep their sessions", res.RequeuedWhileBrowsing)
	}
	// Waiters' counts lapse in an outage longer than the grace; the first
	// to check in after it go first. Measured, not a target.
	t.Logf("%d FIFO inversions after a %v outage", res.FIFOInversions, s.end.Sub(s.start).Round(time.Second))
	if res.Errors != 0 {
		t.Errorf("%d request errors: the fail mode answers with the waiting page", res.Errors)
	}
}
