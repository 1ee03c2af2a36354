package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// The fault tests of issue 23 (item 3): the flash crowd of the
// multi-node tests through three usher nodes on real redis-server
// processes, with a fault injected mid-surge (a toxiproxy proxy from
// redistest, a kill -9, a restart). Each reports over-admission (how far
// over each limit, for how long), visitors sent back to the line while
// browsing, FIFO inversions, request errors and time to normal, and
// asserts the bounds docs/scaling.md states ("Failure table").

// faultConfig is multiConfig with the store section given whole, so that
// each node can reach Redis its own way.
const faultConfig = `listen: %s
store:
  redis:
%s
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

// redisStore is a store.redis section's body (indented for faultConfig)
// on addrs.
func redisStore(addrs []string, isCluster bool, extra string) string {
	s := fmt.Sprintf("    addrs: [%s]\n    cluster: %v\n    fail_mode: closed\n", strings.Join(addrs, ", "), isCluster)
	return s + extra
}

// startFaultNodes starts one usher node per store section, one after the
// other, and a balancer in front.
func startFaultNodes(t *testing.T, stores []string) *cluster {
	t.Helper()
	origin := httptest.NewServer(bench.NewOrigin("faulty shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	c := &cluster{}
	for i, store := range stores {
		addr := freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf(faultConfig, addr, store, origin.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, startUsher(t, path, addr, "sale"))
		c.configs, c.addrs = append(c.configs, path), append(c.addrs, addr)
	}
	c.lb = newBalancer(c.addrs)
	t.Cleanup(c.lb.Close)
	return c
}

// faultFigures is what a fault run measured, against the fault's start
// (from) and end (to).
type faultFigures struct {
	res bench.Result
	// activeOver is the most active sessions over total_active_users,
	// activeOverFor the time spent over it (100 ms samples), overAt when
	// (seconds from the fault's start).
	activeOver    int
	activeOverFor time.Duration
	overAt        []string
	// rateOverFor is the time during which the admissions of the last
	// 60 s were over new_users_per_minute.
	rateOverFor time.Duration
	// during counts admissions between from (and a second, for the
	// decisions in flight) and to; next is the first admission after
	// from (zero: none), after the first one after to.
	during      int
	next, after time.Time
	// rtt50 and rtt95 are percentiles of the admitting requests' round
	// trips (what an admission cost the visitor in time).
	rtt50, rtt95 time.Duration
}

// measureFault computes a run's figures and logs them with the report.
func measureFault(t *testing.T, name string, tl *bench.Timeline, res bench.Result, from, to time.Time) faultFigures {
	t.Helper()
	f := faultFigures{res: res}
	var rtts []time.Duration
	for _, v := range tl.Visitors {
		a := v.Admitted
		if a.IsZero() {
			continue
		}
		if !v.AdmittedSent.IsZero() {
			rtts = append(rtts, a.Sub(v.AdmittedSent))
		}
		if a.After(from.Add(time.Second)) && a.Before(to) {
			f.during++
		}
		if a.After(from) && (f.next.IsZero() || a.Before(f.next)) {
			f.next = a
		}
		if a.After(to) && (f.after.IsZero() || a.Before(f.after)) {
			f.after = a
		}
	}
	slices.Sort(rtts)
	if len(rtts) > 0 {
		f.rtt50, f.rtt95 = rtts[len(rtts)/2], rtts[len(rtts)*95/100]
	}
	const step = 100 * time.Millisecond
	for _, s := range bench.Series(tl, e2eLimits, step) {
		if s.Active > e2eLimits.TotalActiveUsers {
			f.activeOver = max(f.activeOver, s.Active-e2eLimits.TotalActiveUsers)
			f.activeOverFor += step
			f.overAt = append(f.overAt, fmt.Sprintf("%+.1fs", tl.Start.Add(s.T).Sub(from).Seconds()))
		}
		// The series counts admissions by their answers, which a slow
		// answer puts later than usher's decision: only when the
		// certain count (Result.MaxRate) is over the limit is this time
		// over it.
		if s.AdmittedPerMinute > e2eLimits.NewUsersPerMinute && res.MaxRate > e2eLimits.NewUsersPerMinute {
			f.rateOverFor += step
		}
	}
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s", js)
	if len(f.overAt) > 0 {
		t.Logf("over the active limit at (from the fault): %s", strings.Join(f.overAt, " "))
	}
	since := func(a, b time.Time) string {
		if b.IsZero() {
			return "never"
		}
		return b.Sub(a).Round(time.Millisecond).String()
	}
	t.Logf("%s: fault from %v to %v into the run; active over %d by up to %d for %v; %d admissions in the busiest minute (limit %d), over it for %v; %d FIFO inversions; %d sent back while browsing; request errors %v; %d admitted during the fault; first admission %s after its start, %s after its end; admitting round trip p50 %v p95 %v; utilisation %.3f",
		name, from.Sub(tl.Start).Round(time.Millisecond), to.Sub(tl.Start).Round(time.Millisecond),
		e2eLimits.TotalActiveUsers, f.activeOver, f.activeOverFor, res.MaxRate, e2eLimits.NewUsersPerMinute, f.rateOverFor,
		res.FIFOInversions, res.RequeuedWhileBrowsing, tl.ErrorCounts(), f.during, since(from, f.next), since(to, f.after),
		f.rtt50.Round(time.Millisecond), f.rtt95.Round(time.Millisecond), res.Utilization)
	return f
}

// check asserts what every fault run must show: the run exercised the
// room, the active limit was exceeded by at most activeBound for at most a
// session (and the clock slack), the rate by at most rateBound, and
// nobody browsing was sent back to the line.
func (f faultFigures) check(t *testing.T, activeBound, rateBound int) {
	t.Helper()
	if f.res.Admitted < 50 || f.res.Abandoned == 0 {
		t.Errorf("admitted %d, abandoned %d: the run did not exercise the room", f.res.Admitted, f.res.Abandoned)
	}
	if f.activeOver > activeBound {
		t.Errorf("active users reached %d, over the limit of %d by more than %d", f.res.MaxActive, e2eLimits.TotalActiveUsers, activeBound)
	}
	if limit := e2eLimits.SessionDuration + time.Second; f.activeOverFor > limit {
		t.Errorf("over the active limit for %v, want at most a session and the clock slack (%v)", f.activeOverFor, limit)
	}
	if f.res.MaxRate > e2eLimits.NewUsersPerMinute+rateBound {
		t.Errorf("%d admissions in 60 s, over the limit of %d by more than %d", f.res.MaxRate, e2eLimits.NewUsersPerMinute, rateBound)
	}
	if f.res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing", f.res.RequeuedWhileBrowsing)
	}
}

// probe is one visitor outside the crowd, with its own cookie jar.
type probe struct{ c *http.Client }

func newProbe() *probe {
	jar, _ := cookiejar.New(nil)
	return &probe{c: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

// get asks a node for / as a bench visitor would and reports whether the
// origin answered (admitted) and the status.
func (p *probe) get(addr string) (admitted bool, status int, err error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := p.c.Do(req)
	if err != nil {
		return false, 0, err
	}
	resp.Body.Close()
	return resp.Header.Get(bench.HeaderOrigin) == "1", resp.StatusCode, nil
}

// statusCode returns the status of a node's room status endpoint (503
// while its store is unavailable), 0 when it does not answer.
func statusCode(addr string) int {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + addr + "/__usher/status/sale")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestE2EFaultNodePartitioned cuts one node of three off from Redis (a
// toxiproxy proxy between it and Redis stops forwarding, connections
// open: a network partition) 10 s into the surge for 20 s, then heals
// it. The partitioned node applies its fail mode (closed: a new visitor
// waits; a visitor admitted elsewhere keeps its session), the other two
// go on admitting, within the rate exactly and within the active limit
// but for the sessions whose renewals the cut node could not record,
// nobody browsing is sent back to the line, and
// the node rejoins once the partition heals.
func TestE2EFaultNodePartitioned(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	nodePartitioned(t, false)
}

// TestE2EFaultNodePartitionedHealthChecked is TestE2EFaultNodePartitioned
// behind a balancer that health-checks the nodes' status endpoint (503
// while a node's store is unavailable) every 250 ms and sends nothing to
// a node that fails it: the cut node then serves no session uncounted,
// and the room stays within its limits.
func TestE2EFaultNodePartitionedHealthChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	nodePartitioned(t, true)
}

// nodePartitioned runs the partition, behind a health-checking balancer
// when checked.
func nodePartitioned(t *testing.T, checked bool) {
	t.Helper()
	rd := redistest.StartServer(t)
	px := redistest.StartProxy(t, rd.Addr())
	const timeout = "    timeout: 200ms\n"
	c := startFaultNodes(t, []string{
		redisStore([]string{px.Addr()}, false, timeout),
		redisStore([]string{rd.Addr()}, false, timeout),
		redisStore([]string{rd.Addr()}, false, timeout),
	})
	if checked {
		c.lb.Close()
		c.lb = newCheckedBalancer(t, c.addrs)
	}
	cut, healed := c.addrs[0], c.addrs[1]

	// A visitor admitted before the crowd, who browses on through a node
	// that can reach Redis.
	browser := newProbe()
	if in, _, err := browser.get(healed); err != nil || !in {
		t.Fatalf("the first visitor was not admitted (%v): the room is not empty", err)
	}
	type outcome struct {
		from, to, back   time.Time
		browserIn, newIn bool
		newStatus        int
		downStatus       int
		err              error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { done <- o }()
		keep := time.NewTicker(2 * time.Second)
		defer keep.Stop()
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			<-keep.C
			_, _, _ = browser.get(healed)
		}
		if o.err = px.Partition(); o.err != nil {
			return
		}
		o.from = time.Now()
		// Long enough for the node's breaker to open, short of the
		// browser's session.
		time.Sleep(5 * time.Second)
		o.downStatus = statusCode(cut)
		o.browserIn, _, o.err = browser.get(cut)
		if o.err != nil {
			return
		}
		o.newIn, o.newStatus, o.err = newProbe().get(cut)
		if o.err != nil {
			return
		}
		for end := o.from.Add(20 * time.Second); time.Now().Before(end); {
			time.Sleep(min(2*time.Second, time.Until(end)))
			_, _, _ = browser.get(healed)
		}
		if o.err = px.Heal(); o.err != nil {
			return
		}
		o.to = time.Now()
		for deadline := o.to.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if statusCode(cut) == http.StatusOK {
				o.back = time.Now()
				return
			}
		}
	}()
	tl, res := runCrowd(t, c)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	f := measureFault(t, fmt.Sprintf("node partitioned (balancer health checks: %v)", checked), tl, res, o.from, o.to)
	t.Logf("during the partition the cut node's status endpoint answered %d; a browser admitted elsewhere: admitted %v; a new visitor: admitted %v (status %d); the node answered its status again %v after the partition healed",
		o.downStatus, o.browserIn, o.newIn, o.newStatus, o.back.Sub(o.to).Round(time.Millisecond))
	// The other nodes count exactly. The partitioned node lets the
	// requests of running sessions through without the renewals they
	// were due, so their counts would end before their visitors'
	// sessions do and the other nodes give those places away: before the
	// replay of owed renewals, over by 1-3 for 1.0-5.7 s in all, 7 to 16 s
	// after the heal, in each of 4 runs. The node now owes those renewals
	// and replays them as soon as Redis answers, each while the old count
	// still holds (internal/admission/replay.go): measured 0 over in 4
	// runs (docs/scaling.md, "Failure table"). What it cannot save is an
	// owed renewal whose count lapses while the node is still cut off:
	// here a session counted last before about 14 s into the run (15 s
	// sessions, the partition healing at 30 s) whose visitor's last
	// request fell on the cut node, which the room of this crowd
	// (full from the first second, each visitor browsing 3-10 s) makes
	// rare but possible: one is allowed. The rate is counted exactly by
	// the others. Behind the health-checking balancer the bound is the
	// same: it stops sending to the cut node within a check (and the
	// node's own breaker) of the cut, and what the node served uncounted
	// before then is at most a renewal or two, replayed at the heal.
	const bound = 1
	f.check(t, bound, 0)
	if f.activeOver > 0 {
		last := o.to.Add(e2eLimits.SessionDuration + 2*time.Second)
		for _, s := range bench.Series(tl, e2eLimits, 100*time.Millisecond) {
			at := tl.Start.Add(s.T)
			if s.Active > e2eLimits.TotalActiveUsers && (at.Before(o.from) || at.After(last)) {
				t.Errorf("over the active limit %v after the partition began, outside the partition and the session after it", at.Sub(o.from))
				break
			}
		}
	}
	if f.res.Errors != 0 {
		t.Errorf("%d request errors: %v", f.res.Errors, tl.ErrorCounts())
	}
	if o.downStatus != http.StatusServiceUnavailable {
		t.Errorf("the partitioned node's status endpoint answered %d, want 503 (store unavailable)", o.downStatus)
	}
	if !o.browserIn {
		t.Error("a visitor admitted before the partition was not let through by the partitioned node")
	}
	if o.newIn {
		t.Error("the partitioned node admitted a new visitor with fail_mode closed")
	}
	if f.during == 0 {
		t.Error("nobody was admitted during the partition: the other nodes stopped admitting")
	}
	if o.back.IsZero() {
		t.Fatal("the partitioned node did not answer its status within 30 s of the partition healing")
	}
	// The breaker probes every 2 s; the client reconnects on its first
	// call after the heal.
	if gap := o.back.Sub(o.to); gap > 10*time.Second {
		t.Errorf("the node rejoined %v after the partition healed, want within 10 s", gap)
	}
}

// TestE2EFaultRedisRestartPersistent kills the one redis-server (SIGKILL)
// 10 s into the surge and starts it again on the same port 3 s later,
// with its append-only file (appendonly yes, appendfsync everysec): it
// comes back with every write it acknowledged (Redis writes the file
// before it replies; only a crash of the machine loses the last second
// not yet synced), so the room carries on where it was.
func TestE2EFaultRedisRestartPersistent(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartPersistentServer(t)
	// The room is as it was: admissions resume at the next free place
	// (the room was full; sessions of 15 s end every few seconds).
	redisRestart(t, rd, 0, 0, 20*time.Second)
}

// TestE2EFaultRedisRestartEmpty is TestE2EFaultRedisRestartPersistent
// with no persistence: the restarted server is empty (the room's born
// changes: the "epoch change" of issue 23). The nodes see the room's
// counters gone and hold it full for a session and its rate at zero for
// 61 s (the recovery rule, docs/scaling.md), while the sessions running
// are counted again from their tickets: nobody browsing is sent back,
// and the limits hold.
func TestE2EFaultRedisRestartEmpty(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	// The rate is held at zero for 61 s from the loss; then the next
	// check-ins (refresh 2 s) are admitted. Measured: 62.3 s.
	redisRestart(t, rd, 0, 0, 70*time.Second)
}

// redisRestart runs the crowd through three nodes on rd, kills rd 10 s
// in and restarts it 3 s later, and checks the bounds: over the active
// limit by at most activeBound, over the rate by at most rateBound,
// nobody admitted while Redis is down (fail_mode closed), no request
// errors, and admissions again within normal of the restart.
func redisRestart(t *testing.T, rd *redistest.Server, activeBound, rateBound int, normal time.Duration) {
	t.Helper()
	store := redisStore([]string{rd.Addr()}, false, "    timeout: 200ms\n")
	c := startFaultNodes(t, []string{store, store, store})
	type outcome struct {
		from, to time.Time
		err      error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		time.Sleep(10 * time.Second)
		o.from = time.Now()
		rd.Kill()
		time.Sleep(3 * time.Second)
		o.err = rd.Restart()
		o.to = time.Now()
		done <- o
	}()
	tl, res := runCrowd(t, c)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	f := measureFault(t, "redis restarted", tl, res, o.from, o.to)
	f.check(t, activeBound, rateBound)
	if f.during != 0 {
		t.Errorf("%d admitted while Redis was down, with fail_mode closed", f.during)
	}
	if f.res.Errors != 0 {
		t.Errorf("%d request errors: %v", f.res.Errors, tl.ErrorCounts())
	}
	if f.after.IsZero() {
		t.Fatal("nobody was admitted after Redis came back")
	}
	if gap := f.after.Sub(o.to); gap > normal {
		t.Errorf("first admission %v after Redis came back, want within %v", gap, normal)
	}
}

// slowReplicaLag is the slow replica's delay: what the primary sends it
// arrives this late.
const slowReplicaLag = 500 * time.Millisecond

// TestE2EFaultSlowReplica runs the crowd through three nodes on a
// primary whose one replica gets the replication stream 500 ms late (a
// toxiproxy latency toxic on its link), found through three sentinels,
// with wait_replicas 0: the nodes never wait on the replica, so nothing
// changes: the limits hold exactly, no waiter is passed, nobody browsing
// is sent back.
func TestE2EFaultSlowReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	slowReplica(t, 0)
}

// TestE2EFaultSlowReplicaWaitReplicas is TestE2EFaultSlowReplica with
// wait_replicas 1 and a 2 s timeout (WAIT waits up to 1 s): every
// admission and renewal waits for the slow replica's acknowledgement,
// which costs the visitor the lag in time, not order or limits.
func TestE2EFaultSlowReplicaWaitReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	slowReplica(t, 1)
}

func slowReplica(t *testing.T, wait int) {
	t.Helper()
	fo, _ := redistest.StartFailoverSlowReplica(t, slowReplicaLag)
	store := fmt.Sprintf("    sentinel:\n      master_name: %s\n      addrs: [%s]\n    fail_mode: closed\n    timeout: 2s\n    wait_replicas: %d\n",
		redistest.MasterName, strings.Join(fo.SentinelAddrs(), ", "), wait)
	c := startFaultNodes(t, []string{store, store, store})
	// How far behind the replica is, sampled through the run.
	stop := make(chan struct{})
	backlog := make(chan int64, 1)
	go func() {
		var most int64
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				backlog <- most
				return
			case <-tick.C:
				p, r := fo.ReplicaOffsets()
				if r > 0 {
					most = max(most, p-r)
				}
			}
		}
	}()
	tl, res := runCrowd(t, c)
	close(stop)
	most := <-backlog
	f := measureFault(t, fmt.Sprintf("slow replica, wait_replicas %d", wait), tl, res, tl.Start, tl.Start)
	t.Logf("replication stream not yet acknowledged by the replica: up to %d bytes", most)
	f.check(t, 0, 0)
	if f.res.FIFOInversions != 0 {
		t.Errorf("%d FIFO inversions: a slow replica must cost time, not order", f.res.FIFOInversions)
	}
	if most == 0 {
		t.Error("the replica was never seen behind the primary: the lag was not applied")
	}
	if wait > 0 && f.rtt50 < slowReplicaLag {
		t.Errorf("admitting round trip p50 %v with wait_replicas 1, want at least the replica's lag %v: the nodes did not wait for it", f.rtt50, slowReplicaLag)
	}
}

// newCheckedBalancer is newBalancer with health checks: every 250 ms it
// asks each node for the room's status and sends nothing to a node that
// answers other than 200 until it answers 200 again, as a load balancer
// health-checking /__usher/status/<room> does.
func newCheckedBalancer(t *testing.T, backends []string) *httptest.Server {
	t.Helper()
	b := &balancer{backends: backends, downTill: map[string]time.Time{}, base: http.DefaultTransport.(*http.Transport).Clone()}
	stop := make(chan struct{})
	checked := make(chan struct{})
	go func() {
		defer close(checked)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for _, be := range backends {
				if statusCode(be) != http.StatusOK {
					b.mu.Lock()
					b.downTill[be] = time.Now().Add(300 * time.Millisecond)
					b.mu.Unlock()
				}
			}
		}
	}()
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = "placeholder"
			r.Out.Host = r.In.Host
		},
		Transport: b,
	}
	srv := httptest.NewServer(rp)
	t.Cleanup(func() { srv.Close(); close(stop); <-checked })
	return srv
}
