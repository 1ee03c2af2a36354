package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// sentinelConfig is multiConfig with the store found through Sentinel.
const sentinelConfig = `listen: %s
store:
  redis:
    sentinel:
      master_name: %s
      addrs: [%s]
    fail_mode: closed
    timeout: 200ms
    wait_replicas: %d
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

// startSentinelNodes starts n usher nodes that find Redis through f's
// sentinels, with store.redis.wait_replicas wait, and a balancer in front.
func startSentinelNodes(t *testing.T, n int, f *redistest.Failover, wait int) *cluster {
	t.Helper()
	origin := httptest.NewServer(bench.NewOrigin("failover shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	c := &cluster{}
	for i := range n {
		addr := freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(sentinelConfig, addr, redistest.MasterName, strings.Join(f.SentinelAddrs(), ", "), wait, origin.URL)
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, startUsher(t, path, addr, "sale"))
		c.configs, c.addrs = append(c.configs, path), append(c.addrs, addr)
	}
	c.lb = newBalancer(c.addrs)
	t.Cleanup(c.lb.Close)
	return c
}

// TestE2ESentinelFailover runs the flash crowd through three nodes that
// find Redis through three sentinels, and kills the primary (SIGKILL) 10 s
// into the surge: the sentinels promote the replica, and the nodes follow
// it; the old primary is restarted and rejoins as a replica. Nobody is admitted while no primary answers (fail mode closed),
// nobody browsing is sent back to the line, and the room admits again
// after the promotion. What the primary had not yet replicated is lost:
// the limits may be exceeded by those writes, for at most a session.
func TestE2ESentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	// On loopback the replica lags by milliseconds, more on this loaded
	// machine: up to 2 over the active limit in 7 runs, never over the
	// rate (docs/scaling.md).
	sentinelFailover(t, 0, 3, 3)
}

// TestE2ESentinelFailoverWaitReplicas is TestE2ESentinelFailover with
// wait_replicas: 1: every admission and renewal a visitor is told of is on
// the replica before, so the failover loses none and the active limit
// holds. Until the old primary rejoins as a replica, nothing is confirmed
// and the fail mode answers; an admission applied but not confirmed is
// delivered later (the lost-answer takeover), so the visitors' own clock
// can see a few more admissions in a minute than the store counted in it:
// 62, 62 and 63 of 60 in three runs. The bound asserted on that is a
// tenth of the rate.
func TestE2ESentinelFailoverWaitReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	sentinelFailover(t, 1, 0, 6)
}

// sentinelFailover runs the failover with wait_replicas wait and checks
// that the active limit is exceeded by at most lostBound, the rate by at
// most rateBound.
func sentinelFailover(t *testing.T, wait, lostBound, rateBound int) {
	t.Helper()
	f := redistest.StartFailover(t)
	c := startSentinelNodes(t, 3, f, wait)
	const killAt = 10 * time.Second
	killed := make(chan time.Time, 1)
	restarted := make(chan error, 1)
	joined := make(chan time.Time, 1) // the old primary online as a replica
	go func() {
		time.Sleep(killAt)
		f.Primary.Kill()
		killed <- time.Now()
		// Once the replica is promoted, the old primary comes back (a
		// supervisor restarts it) and the sentinels make it a replica:
		// with wait_replicas, the promoted primary needs one to confirm
		// anything.
		for deadline := time.Now().Add(30 * time.Second); !f.Promoted(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				restarted <- fmt.Errorf("the replica was not promoted within 30 s")
				return
			}
		}
		if err := f.RestartPrimary(); err != nil {
			restarted <- err
			return
		}
		restarted <- nil
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if f.ReplicaJoined() {
				joined <- time.Now()
				return
			}
		}
		joined <- time.Time{}
	}()
	tl, res := runCrowd(t, c)
	kill := <-killed
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	primary, promoted := f.WaitPrimary(30 * time.Second)
	whole := <-joined
	// Which failovers happened, as the sentinels logged them: one is
	// expected; a second one (the sentinels holding the promoted replica
	// down in turn) is legitimate Sentinel behaviour that the bounds
	// below must survive too, and is worth seeing when they do not.
	t.Logf("the sentinels name %s as the primary (the replica first promoted: %v); their events:\n%s", primary, promoted, strings.Join(f.FailoverEvents(), "\n"))

	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s", js)
	// Time to normal: from the kill to the first admission after it.
	var next time.Time
	before := 0
	for _, v := range tl.Visitors {
		switch a := v.Admitted; {
		case a.IsZero():
		case !a.After(kill):
			before++
		case next.IsZero() || a.Before(next):
			next = a
		}
	}
	t.Logf("primary killed %v into the run with %d admitted; first admission after it %v later; the old primary online as a replica %v after it; request errors %v",
		kill.Sub(tl.Start).Round(time.Millisecond), before, next.Sub(kill).Round(time.Millisecond), whole.Sub(kill).Round(time.Millisecond), tl.ErrorCounts())
	if next.IsZero() {
		t.Fatal("nobody was admitted after the primary was killed: the nodes did not follow the promoted replica")
	}
	if wait == 0 {
		// The promoted replica answers alone.
		if gap := next.Sub(kill); gap > 20*time.Second {
			t.Errorf("first admission %v after the kill, want within 20 s (down-after %v, then promotion)", gap, f.DownAfter)
		}
	} else {
		// Nothing can be confirmed until a replica is back: time to
		// normal counts from then (the sentinels make the restarted old
		// primary a replica on their own schedule, 15 to 20 s after the
		// kill here), within a few check-ins (refresh 2 s).
		if whole.IsZero() {
			t.Fatal("the restarted primary never came online as a replica of the promoted one")
		}
		if gap := next.Sub(whole); gap > 10*time.Second {
			t.Errorf("first admission %v after a replica was back online, want within 10 s", gap)
		}
	}
	if res.Admitted < 50 || res.Abandoned == 0 {
		t.Errorf("admitted %d, abandoned %d: the run did not exercise the room", res.Admitted, res.Abandoned)
	}
	// What the primary acknowledged but had not yet replicated is lost:
	// an admission lost leaves its visitor browsing uncounted, so the
	// room may take one more, until the lost visitor's next request
	// counts it again or its session's cell expires (one session); a
	// renewal lost, likewise (docs/scaling.md, "Failover: what it may
	// lose").
	over, overFor := 0, time.Duration(0)
	var overAt []string
	const step = 100 * time.Millisecond
	for _, s := range bench.Series(tl, e2eLimits, step) {
		if s.Active > e2eLimits.TotalActiveUsers {
			over = max(over, s.Active-e2eLimits.TotalActiveUsers)
			overFor += step
			overAt = append(overAt, fmt.Sprintf("%+.1fs", (tl.Start.Add(s.T).Sub(kill)).Seconds()))
		}
	}
	if len(overAt) > 0 {
		t.Logf("over the active limit at (from the kill): %s", strings.Join(overAt, " "))
	}
	t.Logf("wait_replicas %d: over the active limit by up to %d for %v in all; %d admissions in the busiest minute (limit %d); %d FIFO inversions; %d sent back while browsing",
		wait, over, overFor, res.MaxRate, e2eLimits.NewUsersPerMinute, res.FIFOInversions, res.RequeuedWhileBrowsing)
	if over > lostBound {
		t.Errorf("active users reached %d, over the limit of %d by more than %d", res.MaxActive, e2eLimits.TotalActiveUsers, lostBound)
	}
	if limit := e2eLimits.SessionDuration + time.Second; overFor > limit {
		t.Errorf("over the active limit for %v, want at most a session and the clock slack (%v)", overFor, limit)
	}
	if res.MaxRate > e2eLimits.NewUsersPerMinute+rateBound {
		t.Errorf("%d admissions in 60 s, over the limit of %d by more than %d", res.MaxRate, e2eLimits.NewUsersPerMinute, rateBound)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing", res.RequeuedWhileBrowsing)
	}
}
