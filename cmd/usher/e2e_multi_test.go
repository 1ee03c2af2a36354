package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// These tests run several usher nodes sharing one Redis (or a Redis
// Cluster) behind a round-robin load balancer, and drive them with the
// flash crowd of the single-node test.

// balancer is a round-robin load balancer that, like a real one with
// health checks, stops sending to a node that refuses connections.
type balancer struct {
	mu       sync.Mutex
	backends []string
	downTill map[string]time.Time
	next     atomic.Uint64
	base     http.RoundTripper
}

func newBalancer(backends []string) *httptest.Server {
	b := &balancer{backends: backends, downTill: map[string]time.Time{}, base: http.DefaultTransport.(*http.Transport).Clone()}
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = "placeholder"
			r.Out.Host = r.In.Host
		},
		Transport: b,
	}
	return httptest.NewServer(rp)
}

// RoundTrip sends a (bodyless, idempotent) request to the next live node,
// trying the others when one refuses.
func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	for range len(b.backends) {
		i := int(b.next.Add(1)) % len(b.backends)
		be := b.backends[i]
		b.mu.Lock()
		down := time.Now().Before(b.downTill[be])
		b.mu.Unlock()
		if down {
			continue
		}
		r := req.Clone(req.Context())
		r.URL.Host = be
		var resp *http.Response
		if resp, err = b.base.RoundTrip(r); err == nil {
			return resp, nil
		}
		b.mu.Lock()
		b.downTill[be] = time.Now().Add(5 * time.Second)
		b.mu.Unlock()
	}
	if err == nil {
		err = fmt.Errorf("no live node")
	}
	return nil, err
}

const multiConfig = `listen: %s
store:
  redis:
    addrs: [%s]
    cluster: %v
    fail_mode: %s
    timeout: 200ms
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

type cluster struct {
	nodes   []*proc
	configs []string
	addrs   []string
	lb      *httptest.Server
}

// startNodes starts n usher nodes on the Redis addresses, one after the
// other (the first generates the key ring and keeps it in Redis; the
// others take it from there), and a balancer in front.
func startNodes(t *testing.T, n int, redisAddrs []string, isCluster bool, failMode string) *cluster {
	t.Helper()
	origin := httptest.NewServer(bench.NewOrigin("multi shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	c := &cluster{}
	for i := range n {
		addr := freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		body := fmt.Sprintf(multiConfig, addr, strings.Join(redisAddrs, ", "), isCluster, failMode, origin.URL)
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

func runCrowd(t *testing.T, c *cluster) (*bench.Timeline, bench.Result) {
	t.Helper()
	return runVisitors(t, e2eVisitors(t, c.lb.URL+"/"))
}

func runVisitors(t *testing.T, cfg bench.Config) (*bench.Timeline, bench.Result) {
	t.Helper()
	tl, err := bench.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return tl, bench.Report(tl, e2eLimits)
}

func TestE2EThreeNodesOneRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	c := startNodes(t, 3, []string{rd.Addr()}, false, "closed")
	_, res := runCrowd(t, c)
	checkFlashCrowd(t, res)
}

func TestE2EThreeNodesRedisCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rc := redistest.StartCluster(t, 3)
	c := startNodes(t, 3, rc.Addrs(), true, "closed")
	_, res := runCrowd(t, c)
	checkFlashCrowd(t, res)
}

func TestE2EKillOneNode(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	c := startNodes(t, 3, []string{rd.Addr()}, false, "closed")
	go func() {
		time.Sleep(25 * time.Second)
		c.nodes[1].kill()
	}()
	_, res := runCrowd(t, c)
	checkFlashCrowd(t, res)
}

// outage stops Redis from 25 s to 35 s into the run; a restarted Redis has
// lost its data.
func outage(rd *redistest.Server) (from, to time.Time) {
	time.Sleep(25 * time.Second)
	from = time.Now()
	rd.Kill()
	time.Sleep(10 * time.Second)
	rd.Start()
	return from, time.Now()
}

func TestE2ERedisOutageFailClosed(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	c := startNodes(t, 3, []string{rd.Addr()}, false, "closed")
	var from, to time.Time
	done := make(chan struct{})
	go func() { from, to = outage(rd); close(done) }()
	tl, res := runCrowd(t, c)
	<-done
	t.Logf("report: %+v", res)
	// In-flight decisions may finish just after the stop; none after that.
	for _, v := range tl.Visitors {
		if v.Admitted.After(from.Add(time.Second)) && v.Admitted.Before(to) {
			t.Errorf("visitor %s admitted at %v, during the outage", v.ID, v.Admitted.Sub(from))
		}
	}
	if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 {
		t.Errorf("limits after the outage: active %.2f, rate %.2f of the limit", res.MaxActiveRatio, res.MaxRateRatio)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d admitted visitors sent back to the line", res.RequeuedWhileBrowsing)
	}
	if res.Admitted < 50 {
		t.Errorf("only %d admitted: the room did not recover after the outage", res.Admitted)
	}
}

func TestE2ERedisOutageFailOpen(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	c := startNodes(t, 3, []string{rd.Addr()}, false, "open")
	var from, to time.Time
	done := make(chan struct{})
	go func() { from, to = outage(rd); close(done) }()
	// Visitors keep coming for 70 s, so that the room is watched for well
	// over a session after Redis is back.
	cfg := e2eVisitors(t, c.lb.URL+"/")
	var err error
	if cfg.Arrivals, err = bench.ParseArrivals("steady:160@70s"); err != nil {
		t.Fatal(err)
	}
	tl, res := runVisitors(t, cfg)
	<-done
	t.Logf("report: %+v", res)
	during := 0
	for _, v := range tl.Visitors {
		if v.Admitted.After(from.Add(time.Second)) && v.Admitted.Before(to) {
			during++
		}
	}
	if during == 0 {
		t.Error("nobody was admitted while Redis was down with fail_mode open")
	}
	// Within one session duration of Redis coming back, the room is under
	// its limits again, and stays there.
	back := to.Add(e2eLimits.SessionDuration + 2*time.Second)
	watched := 0
	for _, s := range bench.Series(tl, e2eLimits, 500*time.Millisecond) {
		if !tl.Start.Add(s.T).After(back) {
			continue
		}
		if s.Waiting > 0 {
			watched++
		}
		if s.Active > e2eLimits.TotalActiveUsers {
			t.Errorf("%v after Redis came back: %d active, over the limit of %d",
				tl.Start.Add(s.T).Sub(to), s.Active, e2eLimits.TotalActiveUsers)
			break
		}
	}
	if watched < 20 {
		t.Errorf("only %d samples with a queue after the room should be back under its limits: the test watched nothing", watched)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d admitted visitors sent back to the line", res.RequeuedWhileBrowsing)
	}
}
