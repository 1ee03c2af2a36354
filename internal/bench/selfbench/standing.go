package selfbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// StandingResult is usher bench --scenario standing-room's output: for each
// number of waiters tried, the check-ins a second those waiters send when
// each follows the interval usher gives it (as the waiting page does), the
// check-in latency, and the usher process's memory (on Redis, each node's,
// and the Redis masters' calls and load).
type StandingResult struct {
	Scenario string `json:"scenario"`
	// Reference is true when a static server stood in usher's place
	// (--reference): the figures are the machine's and the generator's.
	Reference bool `json:"reference,omitempty"`
	// Store is usher's store: embedded, redis or redis-cluster (empty
	// with Reference).
	Store string `json:"store,omitempty"`
	// Nodes is how many usher processes shared the store, the crowd's
	// connections spread over them (connection i to node i mod Nodes), as
	// a load balancer without stickiness spreads them.
	Nodes int `json:"nodes,omitempty"`
	// Shards is the room's shards (--shards): its line spread over a
	// front and Shards-1 back Redis shards (empty with Reference).
	Shards      int     `json:"shards,omitempty"`
	RefreshS    float64 `json:"refresh_interval_s"`
	MaxRefreshS float64 `json:"max_refresh_interval_s"`
	BoundMs     float64 `json:"bound_p99_ms"`
	MaxWaiters  int     `json:"max_waiters_within_bound"`
	RSSAtMaxMB  float64 `json:"rss_mb_at_max"`
	// GeneratorRSSMB is the load generator's own memory at the end (it
	// holds every virtual waiter's ticket).
	GeneratorRSSMB float64        `json:"generator_rss_mb"`
	Steps          []StandingStep `json:"steps"`
	// Stopped, when not empty, is why the run stopped before its last
	// step: the generator could not bring that step's newcomers in (the
	// machine is too small for it); the steps before stand.
	Stopped string `json:"stopped,omitempty"`
}

// StandingStep is one number of waiters, measured over one
// max_refresh_interval once every waiter has its place.
type StandingStep struct {
	Waiters int `json:"waiters"`
	// CheckInsPerS is the check-ins a second the waiters sent, each when
	// its last answer said.
	CheckInsPerS float64 `json:"checkins_per_s"`
	// PeakPerS is the most check-ins due in one second of the step (by
	// their scheduled moments): well above CheckInsPerS, the waiters come
	// in bursts.
	PeakPerS int `json:"peak_checkins_per_s"`
	// FixedRPS is what the same waiters would send checking in every
	// refresh_interval.
	FixedRPS float64 `json:"fixed_interval_rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	// Held is how many check-ins usher held before deciding them (their
	// answers' Server-Timing says so): near-front check-ins that wait, by
	// design, up to a second for a place that frees on the next one, so
	// that the waiter goes in then rather than a refresh later.
	Held int `json:"held_checkins"`
	// DelayP99ms is the p99 of each check-in's latency less its hold:
	// what a waiter experiences as delay. The bound is judged on it.
	DelayP99ms float64 `json:"delay_p99_ms"`
	// NotHeldP99ms is the p99 latency of the check-ins not held.
	NotHeldP99ms float64 `json:"p99_not_held_ms"`
	// LateP99ms is how late the generator sent its check-ins (p99): above
	// a second, it could not keep up and the step measures nothing.
	LateP99ms float64 `json:"late_p99_ms"`
	// SchedP99ms is the p99 from the moment each check-in was due (its
	// last answer plus the interval it gave, as the page counts) to its
	// full answer: the latency with the generator's own lateness in it,
	// so that a generator falling behind cannot hide slow answers.
	SchedP99ms float64 `json:"p99_from_schedule_ms"`
	Errors     int     `json:"errors"`
	// Connections is how many connections the generator opened during
	// the step: it keeps them alive, as browsers do, so a steady step
	// opens none.
	Connections int `json:"connections_opened"`
	// Admitted is how many waiters the room let in during the step: the
	// front of the line moves.
	Admitted int `json:"admitted"`
	// UsherCPUus is usher's CPU time (user and system) per check-in
	// during the step, in microseconds: what a check-in costs whatever
	// else the machine runs.
	UsherCPUus float64 `json:"usher_cpu_us_per_checkin"`
	// GeneratorCPUus is the load generator's CPU time per check-in: it
	// shares the machine with usher.
	GeneratorCPUus float64 `json:"generator_cpu_us_per_checkin"`
	// RSSMB is usher's resident memory at the step's end: the largest
	// node's with several (RSSPerNodeMB).
	RSSMB          float64 `json:"rss_mb"`
	GeneratorRSSMB float64 `json:"generator_rss_mb"`
	// On Redis: UsherCPUus is the nodes' CPU summed; RSSPerNodeMB is each
	// node's memory.
	RSSPerNodeMB []float64 `json:"rss_mb_per_node,omitempty"`
	// RedisCallsPerCheckIn is the calls the Redis masters answered during
	// the step (their own count of scripts, INFO commandstats, summed)
	// per check-in sent: what answering far-back check-ins from the
	// nodes' views saves (ShardLoad.CallsPerS).
	RedisCallsPerCheckIn float64 `json:"redis_calls_per_checkin,omitempty"`
	// RedisCommandsPerCheckIn is every command the masters ran per
	// check-in, those run by scripts included (ShardLoad.CommandsPerS).
	RedisCommandsPerCheckIn float64 `json:"redis_commands_per_checkin,omitempty"`
	// RedisShards is each master's load during the step.
	RedisShards []ShardLoad `json:"redis_shards,omitempty"`
	// RedisSpread says how evenly the masters shared the step's load.
	RedisSpread *ShardSpread `json:"redis_spread,omitempty"`
}

// The room's front moves: standingRate visitors a minute go in and stay a
// minute, so the first waiters check in as they near the front and the
// long tail at max_refresh_interval.
const (
	standingRate = 50
	standingRoom = `  - id: standing
    origin: %%s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: %d
    session_duration: 1m
    refresh_interval: %s
    max_refresh_interval: %s
    json_response_enabled: true
    shards: %d
`
)

// standingSteps are the numbers of waiters tried, up to --max-waiters.
var standingSteps = []int{1000, 10000, 100000, 250000, 500000, 1000000}

// Standing runs the standing-room scenario: usher in a process of its own
// (with f.Redis, f.Nodes of them sharing the Redis store), a line of
// waiters growing step by step, each waiter checking in when its answers
// say, and each step's check-in latency, CPU and memory (on Redis, the
// masters' calls and load as well).
func Standing(ctx context.Context, f *Config, p *Product) (*StandingResult, error) {
	// usher runs as its own process, so that its memory is its own.
	dir, err := os.MkdirTemp("", "usher-standing-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	origin := bench.NewOrigin("standing shop")
	oln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	osrv := &http.Server{Handler: origin}
	go osrv.Serve(oln)
	defer osrv.Close()
	rooms := filepath.Join(dir, "rooms.yaml")
	body := fmt.Sprintf(standingRoom, standingRate, standingRate, f.Refresh, f.MaxRefresh, max(f.Shards, 1))
	if err := os.WriteFile(rooms, []byte(body), 0o600); err != nil {
		return nil, err
	}
	// With USHER_BENCH_CPUPROFILE set to a directory, usher writes its
	// CPU profile there (usher.cpu.pprof) and the generator its own
	// (standing-generator.cpu.pprof).
	if prof := os.Getenv(profileEnv); prof != "" {
		pf, err := os.Create(filepath.Join(prof, "standing-generator.cpu.pprof"))
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return nil, err
		}
		defer pf.Close()
		defer pprof.StopCPUProfile()
	}
	var targets []*childTarget
	defer func() {
		for _, t := range targets {
			t.stop()
		}
	}()
	switch {
	case f.Reference:
		t, err := startChild(ctx, "static", "--refresh", f.Refresh.String(), "--max-refresh", f.MaxRefresh.String())
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	case f.Redis != "":
		if targets, err = startStandingNodes(ctx, f, dir, rooms, "http://"+oln.Addr().String()); err != nil {
			return nil, err
		}
	default:
		t, err := startChild(ctx, "usher", "--dir", filepath.Join(dir, "data"), "--rooms", rooms, "--origin", "http://"+oln.Addr().String())
		if err != nil {
			return nil, err
		}
		targets = append(targets, t)
	}
	var meter *redisMeter
	if f.Redis != "" {
		if meter, err = newRedisMeter(ctx, f.Redis, f.RedisCluster); err != nil {
			return nil, err
		}
		defer meter.close()
	}
	base := targets[0].url + "/"
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = standingWorkers, standingWorkers
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// The room fills at once, so that everyone after waits.
	for range standingRate {
		if _, _, err := checkIn(ctx, client, base, ""); err != nil && !errors.Is(err, errAdmitted) {
			return nil, err
		}
	}
	res := &StandingResult{Scenario: "standing-room", Reference: f.Reference, RefreshS: f.Refresh.Seconds(), MaxRefreshS: f.MaxRefresh.Seconds(),
		BoundMs: float64(f.Bound) / float64(time.Millisecond), Nodes: len(targets)}
	if !f.Reference {
		res.Shards = max(f.Shards, 1)
	}
	switch {
	case f.Reference:
	case f.RedisCluster:
		res.Store = "redis-cluster"
	case f.Redis != "":
		res.Store = "redis"
	default:
		res.Store = "embedded"
	}
	if len(f.steps) == 0 {
		return res, nil
	}
	var hosts []string
	for _, t := range targets {
		hosts = append(hosts, strings.TrimPrefix(t.url, "http://"))
	}
	c, err := newCrowd(ctx, client, base, hosts, f.steps[len(f.steps)-1], f.MaxRefresh)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	within := true
	line := p.progress("usher bench: ")
	defer line.Done()
	for _, n := range f.steps {
		line.Update(fmt.Sprintf("%s waiters (p99 within the bound up to %s)", bench.Count(n), bench.Count(res.MaxWaiters)))
		if err := c.join(n - c.joined()); err != nil {
			if len(res.Steps) == 0 || ctx.Err() != nil {
				return nil, err
			}
			// The steps measured stand: say why the next one is not.
			res.Stopped = fmt.Sprintf("%s waiters: %v", bench.Count(n), err)
			break
		}
		// Every newcomer checks in once at refresh_interval and is then
		// given its interval; measure over the longest one.
		if err := sleepCtx(ctx, f.Refresh+f.Refresh/10+2*time.Second); err != nil {
			return nil, err
		}
		step, err := measureStanding(ctx, f, c, targets, meter)
		if err != nil {
			return nil, err
		}
		res.Steps = append(res.Steps, step)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if step.Errors > 0 {
			break
		}
		// Every step runs (each says what that many waiters cost); the
		// waiters held are those of the steps before the first one out
		// of the bound.
		if within = within && step.DelayP99ms <= res.BoundMs && step.LateP99ms <= 1000; within {
			res.MaxWaiters, res.RSSAtMaxMB = n, step.RSSMB
		}
	}
	res.GeneratorRSSMB = rssMB(os.Getpid())
	return res, nil
}

// measureStanding measures one step: the crowd's check-ins over the
// longest interval, and what they cost usher's nodes (CPU summed, memory
// each) and the Redis masters (with meter; nil on the embedded store).
func measureStanding(ctx context.Context, f *Config, c *crowd, targets []*childTarget, meter *redisMeter) (StandingStep, error) {
	nodesCPU := func() float64 {
		var sum float64
		for _, t := range targets {
			sum += cpuSeconds(t.cmd.Process.Pid)
		}
		return sum
	}
	var shards0 []shardSample
	if meter != nil {
		var err error
		if shards0, err = meter.read(ctx); err != nil {
			return StandingStep{}, err
		}
	}
	start := time.Now()
	cpu0, gen0 := nodesCPU(), cpuSeconds(os.Getpid())
	step := c.measure(ctx, f.MaxRefresh)
	cpu1, gen1 := nodesCPU(), cpuSeconds(os.Getpid())
	sent := step.CheckInsPerS * f.MaxRefresh.Seconds()
	if meter != nil {
		shards1, err := meter.read(ctx)
		if err != nil {
			return StandingStep{}, err
		}
		var calls, commands int64
		step.RedisShards, calls, commands = meter.shardLoads(shards0, shards1, time.Since(start))
		step.RedisSpread = spreadOf(step.RedisShards)
		if sent > 0 {
			step.RedisCallsPerCheckIn, step.RedisCommandsPerCheckIn = float64(calls)/sent, float64(commands)/sent
		}
	}
	if sent > 0 {
		step.UsherCPUus = (cpu1 - cpu0) / sent * 1e6
		step.GeneratorCPUus = (gen1 - gen0) / sent * 1e6
	}
	step.FixedRPS = float64(step.Waiters) / f.Refresh.Seconds()
	for _, t := range targets {
		rss := rssMB(t.cmd.Process.Pid)
		step.RSSMB = max(step.RSSMB, rss)
		if meter != nil {
			step.RSSPerNodeMB = append(step.RSSPerNodeMB, rss)
		}
	}
	step.GeneratorRSSMB = rssMB(os.Getpid())
	if os.Getenv(profileEnv) != "" {
		// The targets write their heap profiles and MemStats now, their
		// connections busy (the last step's files stay).
		for _, t := range targets {
			_ = t.cmd.Process.Signal(syscall.SIGUSR1)
		}
	}
	return step, nil
}

// errAdmitted is a check-in that let the waiter in.
var errAdmitted = errors.New("admitted")

var bodyPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// checkIn sends one request with the ticket cookie (if any). A waiting
// answer returns the ticket cookie it sets (or the old one) and the
// interval it gives (refreshIntervalSeconds); an answer that lets the
// visitor in returns errAdmitted.
func checkIn(ctx context.Context, c *http.Client, url, cookie string) (string, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", 0, err
	}
	req.Header.Set("Accept", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", 0, err
	}
	buf := bodyPool.Get().(*bytes.Buffer)
	defer bodyPool.Put(buf)
	buf.Reset()
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	after, err := waitingAnswer(buf.Bytes())
	if err != nil {
		return "", 0, err
	}
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "__usher_wr") {
			ck, _, _ := strings.Cut(sc, ";")
			return ck, after, nil
		}
	}
	return cookie, after, nil
}

// waitingAnswer reads a check-in's JSON answer: the interval a waiting
// answer gives (refreshIntervalSeconds), or errAdmitted for an answer that
// let the visitor in.
func waitingAnswer(body []byte) (time.Duration, error) {
	if !bytes.Contains(body, []byte(`"inWaitingRoom":true`)) {
		return 0, errAdmitted
	}
	if _, rest, ok := bytes.Cut(body, []byte(`"refreshIntervalSeconds":`)); ok {
		end := bytes.IndexAny(rest, ",}")
		if s, err := strconv.Atoi(string(rest[:max(end, 0)])); err == nil && s > 0 {
			return time.Duration(s) * time.Second, nil
		}
	}
	return 0, fmt.Errorf("a waiting answer without refreshIntervalSeconds: %.200s", body)
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// cpuSeconds returns a process's CPU time in seconds (Linux), or 0.
func cpuSeconds(pid int) float64 { return procCPU(pid).Seconds() }

// rssMB returns a process's resident memory in MB (Linux), or 0.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// staticWaiting is the standing room's reference (--reference): it
// answers every request as usher answers a waiter, with a JSON body and a
// ticket cookie of usher's sizes and the intervals usher gives (refresh,
// doubling at each check-in up to maxRefresh), and does nothing else: no
// ticket to open or seal, no decision, no store.
func staticWaiting(refresh, maxRefresh time.Duration) http.Handler {
	pad := strings.Repeat("x", 160)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := 0
		if c, err := r.Cookie("__usher_wr_standing"); err == nil {
			n, _, _ := strings.Cut(c.Value, ".")
			k, _ = strconv.Atoi(n)
		}
		iv := refresh
		for range min(k, 16) {
			iv = min(2*iv, maxRefresh)
		}
		// A tenth either way, rounded to the second, as usher's jitter.
		iv = max((iv + time.Duration(rand.Int64N(int64(iv/5)+1)) - iv/10).Round(time.Second), time.Second)
		h := w.Header()
		h.Set("Set-Cookie", "__usher_wr_standing="+strconv.Itoa(k+1)+"."+pad+"; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax")
		h.Set("Cache-Control", "no-store")
		h.Set("Refresh", strconv.Itoa(int(iv/time.Second)))
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Language")
		h.Set("X-Request-Id", "standing-reference-00000000000")
		j := waitingJSONFor(int(iv / time.Second))
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(j)))
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(j)
	})
}

// waitingJSONFor is a waiting answer of usher's shape with the interval s.
func waitingJSONFor(s int) []byte {
	return fmt.Appendf(nil, `{"usherWaitingRoom":{"inWaitingRoom":true,"waitTimeKnown":true,"waitTime":1200,"waitTimeSeconds":72000,`+
		`"waitTimeFormatted":"20 hours","queueIsFull":false,"queueAll":false,"lastUpdated":"2026-11-23T12:00:00Z",`+
		`"refreshIntervalSeconds":%d,"queueingMethod":"fifo","isFIFOQueue":true,"isRandomQueue":false,"position":500000,`+
		`"peopleAhead":499999,"isEventPrequeueing":false,"timeUntilEventStart":0,"timeUntilEventStartSeconds":0}}`+"\n", s)
}
