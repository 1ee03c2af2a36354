package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// StandingResult is usher bench --scenario standing-room's output: for each
// number of waiters tried, the check-ins a second those waiters send when
// each follows the interval usher gives it (as the waiting page does), the
// check-in latency, and the usher process's memory.
type StandingResult struct {
	Scenario    string  `json:"scenario"`
	RefreshS    float64 `json:"refresh_interval_s"`
	MaxRefreshS float64 `json:"max_refresh_interval_s"`
	BoundMs     float64 `json:"bound_p99_ms"`
	MaxWaiters  int     `json:"max_waiters_within_bound"`
	RSSAtMaxMB  float64 `json:"rss_mb_at_max"`
	// GeneratorRSSMB is the load generator's own memory at the end (it
	// holds every virtual waiter's ticket).
	GeneratorRSSMB float64        `json:"generator_rss_mb"`
	Steps          []StandingStep `json:"steps"`
}

// StandingStep is one number of waiters, measured over one
// max_refresh_interval once every waiter has its place.
type StandingStep struct {
	Waiters int `json:"waiters"`
	// CheckInsPerS is the check-ins a second the waiters sent, each when
	// its last answer said.
	CheckInsPerS float64 `json:"checkins_per_s"`
	// FixedRPS is what the same waiters would send checking in every
	// refresh_interval.
	FixedRPS float64 `json:"fixed_interval_rps"`
	P50ms    float64 `json:"p50_ms"`
	P99ms    float64 `json:"p99_ms"`
	// LateP99ms is how late the generator sent its check-ins (p99): above
	// a second, it could not keep up and the step measures nothing.
	LateP99ms float64 `json:"late_p99_ms"`
	Errors    int     `json:"errors"`
	// Admitted is how many waiters the room let in during the step: the
	// front of the line moves.
	Admitted int `json:"admitted"`
	// UsherCPUus is usher's CPU time (user and system) per check-in
	// during the step, in microseconds: what a check-in costs whatever
	// else the machine runs.
	UsherCPUus     float64 `json:"usher_cpu_us_per_checkin"`
	RSSMB          float64 `json:"rss_mb"`
	GeneratorRSSMB float64 `json:"generator_rss_mb"`
}

// The room's front moves: standingRate visitors a minute go in and stay a
// minute, so the first waiters check in as they near the front and the
// long tail at max_refresh_interval.
const (
	standingRate   = 50
	standingConfig = `listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: standing
    origin: %s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: %d
    session_duration: 1m
    refresh_interval: %s
    max_refresh_interval: %s
    json_response_enabled: true
`
)

// standingSteps are the numbers of waiters tried, up to --max-waiters.
var standingSteps = []int{1000, 10000, 100000, 250000, 500000, 1000000}

func (m *Main) benchStanding(ctx context.Context, f *benchFlags) (*StandingResult, error) {
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
	addr, err := freeLoopback()
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "usher.yaml")
	body := fmt.Sprintf(standingConfig, addr, filepath.Join(dir, "data"), "http://"+oln.Addr().String(),
		standingRate, standingRate, f.refresh, f.maxRefresh)
	if err := os.WriteFile(cfgPath, []byte(body), 0o600); err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--config", cfgPath)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	base := "http://" + addr + "/"
	if err := waitUp(ctx, base+"__usher/status/standing"); err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = standingWorkers, standingWorkers
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// The room fills at once, so that everyone after waits.
	for range standingRate {
		if _, _, err := checkIn(ctx, client, base, ""); err != nil && !errors.Is(err, errAdmitted) {
			return nil, err
		}
	}
	res := &StandingResult{Scenario: "standing-room", RefreshS: f.refresh.Seconds(), MaxRefreshS: f.maxRefresh.Seconds(),
		BoundMs: float64(f.bound) / float64(time.Millisecond)}
	if len(f.steps) == 0 {
		return res, nil
	}
	c, err := newCrowd(ctx, client, base, f.steps[len(f.steps)-1], f.maxRefresh)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	within := true
	line := m.progress("usher bench: ")
	defer line.Done()
	for _, n := range f.steps {
		line.Update(fmt.Sprintf("%s waiters (p99 within the bound up to %s)", bench.Count(n), bench.Count(res.MaxWaiters)))
		if err := c.join(n - c.joined()); err != nil {
			return nil, err
		}
		// Every newcomer checks in once at refresh_interval and is then
		// given its interval; measure over the longest one.
		if err := sleepCtx(ctx, f.refresh+f.refresh/10+2*time.Second); err != nil {
			return nil, err
		}
		cpu0 := cpuSeconds(cmd.Process.Pid)
		step := c.measure(ctx, f.maxRefresh)
		if sent := step.CheckInsPerS * f.maxRefresh.Seconds(); sent > 0 {
			step.UsherCPUus = (cpuSeconds(cmd.Process.Pid) - cpu0) / sent * 1e6
		}
		step.FixedRPS = float64(step.Waiters) / f.refresh.Seconds()
		step.RSSMB = rssMB(cmd.Process.Pid)
		step.GeneratorRSSMB = rssMB(os.Getpid())
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
		if within = within && step.P99ms <= res.BoundMs && step.LateP99ms <= 1000; within {
			res.MaxWaiters, res.RSSAtMaxMB = n, step.RSSMB
		}
	}
	res.GeneratorRSSMB = rssMB(os.Getpid())
	return res, nil
}

// standingWorkers is the most check-ins the generator has in flight.
const standingWorkers = 256

// crowd is the load generator's virtual waiters: each is its ticket cookie
// in one arena and its index in a timing wheel of 100 ms slots, so that a
// million of them cost their cookies and little else (no goroutine, no
// timer each). A waiter checks in when its last answer said, as the page
// does, and leaves once let in.
type crowd struct {
	ctx    context.Context
	cancel context.CancelFunc
	client *http.Client
	url    string
	name   string // the cookie's name, the same for all

	stride int      // bytes per waiter in the arena
	chunks [][]byte // the arena: cookie values, stride bytes each, chunkSize waiters a chunk, made as waiters join
	lens   []uint16 // cookie length per waiter
	n      atomic.Int64

	mu     sync.Mutex
	wheel  [][]uint32
	origin time.Time
	cursor int64 // the next slot to dispatch

	work chan item
	wg   sync.WaitGroup

	rec      sync.Mutex
	on       bool
	lats     []time.Duration
	late     []time.Duration
	errs     int
	admitted int
	sent     int
}

type item struct {
	i   uint32
	due int64 // unix ns
}

const (
	wheelSlot = 100 * time.Millisecond
	chunkSize = 1 << 14
)

// newCrowd makes room for up to max waiters of the room at url, whose
// longest check-in interval is maxRefresh, and starts the wheel.
func newCrowd(ctx context.Context, client *http.Client, url string, max int, maxRefresh time.Duration) (*crowd, error) {
	ck, _, err := checkIn(ctx, client, url, "")
	if err != nil {
		return nil, err
	}
	name, value, _ := strings.Cut(ck, "=")
	c := &crowd{client: client, url: url, name: name, stride: len(value) + 96}
	c.ctx, c.cancel = context.WithCancel(ctx)
	c.chunks = make([][]byte, max/chunkSize+1)
	c.lens = make([]uint16, max)
	// The wheel spans the longest interval with its jitter and rounding.
	slots := int((maxRefresh+maxRefresh/5+10*time.Second)/wheelSlot) + 1
	c.wheel = make([][]uint32, slots)
	c.origin = time.Now()
	c.work = make(chan item, 4096)
	for range standingWorkers {
		c.wg.Go(c.worker)
	}
	c.wg.Go(c.dispatch)
	return c, nil
}

func (c *crowd) stop() {
	c.cancel()
	c.wg.Wait()
}

func (c *crowd) joined() int { return int(c.n.Load()) }

// join brings k new waiters in (64 at once), each then checking in on its
// own.
func (c *crowd) join(k int) error {
	var wg sync.WaitGroup
	var first atomic.Pointer[error]
	sem := make(chan struct{}, 64)
	for range k {
		if c.ctx.Err() != nil {
			return c.ctx.Err()
		}
		sem <- struct{}{}
		i := uint32(c.n.Load())
		if k := int(i) / chunkSize; c.chunks[k] == nil {
			c.chunks[k] = make([]byte, chunkSize*c.stride)
		}
		c.n.Add(1)
		wg.Go(func() {
			defer func() { <-sem }()
			ck, after, err := checkIn(c.ctx, c.client, c.url, "")
			if err == nil {
				err = c.keep(i, ck)
			}
			if err != nil {
				first.CompareAndSwap(nil, &err)
				return
			}
			c.schedule(i, time.Now().Add(after))
		})
	}
	wg.Wait()
	if p := first.Load(); p != nil {
		return *p
	}
	return nil
}

// keep stores waiter i's cookie.
func (c *crowd) keep(i uint32, cookie string) error {
	name, value, _ := strings.Cut(cookie, "=")
	if name != c.name || len(value) > c.stride {
		return fmt.Errorf("the ticket cookie %q (%d bytes) does not fit the generator's %d", name, len(value), c.stride)
	}
	copy(c.chunks[int(i)/chunkSize][int(i)%chunkSize*c.stride:], value)
	c.lens[i] = uint16(len(value))
	return nil
}

func (c *crowd) cookie(i uint32) string {
	off := int(i) % chunkSize * c.stride
	return c.name + "=" + string(c.chunks[int(i)/chunkSize][off:off+int(c.lens[i])])
}

// schedule files waiter i for a check-in at at.
func (c *crowd) schedule(i uint32, at time.Time) {
	s := int64(at.Sub(c.origin) / wheelSlot)
	c.mu.Lock()
	s = min(max(s, c.cursor), c.cursor+int64(len(c.wheel))-1)
	k := s % int64(len(c.wheel))
	c.wheel[k] = append(c.wheel[k], i)
	c.mu.Unlock()
}

// dispatch hands the waiters of every slot that is due to the workers.
func (c *crowd) dispatch() {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	defer close(c.work)
	var spare []uint32
	for {
		select {
		case <-c.ctx.Done():
			return
		case now := <-t.C:
			due := int64(now.Sub(c.origin) / wheelSlot)
			for {
				c.mu.Lock()
				if c.cursor > due {
					c.mu.Unlock()
					break
				}
				k := c.cursor % int64(len(c.wheel))
				list := c.wheel[k]
				c.wheel[k] = spare[:0]
				at := c.origin.Add(time.Duration(c.cursor) * wheelSlot).UnixNano()
				c.cursor++
				c.mu.Unlock()
				for _, i := range list {
					select {
					case c.work <- item{i, at}:
					case <-c.ctx.Done():
						return
					}
				}
				spare = list
			}
		}
	}
}

func (c *crowd) worker() {
	for it := range c.work {
		start := time.Now()
		ck, after, err := checkIn(c.ctx, c.client, c.url, c.cookie(it.i))
		lat := time.Since(start)
		if c.ctx.Err() != nil {
			return
		}
		switch {
		case errors.Is(err, errAdmitted):
			// In: it shops and leaves the line.
		case err == nil:
			err = c.keep(it.i, ck)
		}
		c.rec.Lock()
		if c.on {
			c.sent++
			switch {
			case errors.Is(err, errAdmitted):
				c.admitted++
				c.lats = append(c.lats, lat)
			case err != nil:
				c.errs++
			default:
				c.lats = append(c.lats, lat)
			}
			c.late = append(c.late, start.Sub(time.Unix(0, it.due)))
		}
		c.rec.Unlock()
		switch {
		case errors.Is(err, errAdmitted):
		case err != nil:
			// A failed check-in is tried again, as the page does.
			c.schedule(it.i, time.Now().Add(5*time.Second))
		default:
			c.schedule(it.i, time.Now().Add(after))
		}
	}
}

// measure records the check-ins sent during d.
func (c *crowd) measure(ctx context.Context, d time.Duration) StandingStep {
	c.rec.Lock()
	c.on, c.lats, c.late, c.errs, c.admitted, c.sent = true, c.lats[:0], c.late[:0], 0, 0, 0
	c.rec.Unlock()
	start := time.Now()
	_ = sleepCtx(ctx, d)
	c.rec.Lock()
	defer c.rec.Unlock()
	c.on = false
	step := StandingStep{Waiters: c.joined(), CheckInsPerS: float64(c.sent) / time.Since(start).Seconds(),
		Errors: c.errs, Admitted: c.admitted}
	if n := len(c.lats); n > 0 {
		slices.Sort(c.lats)
		step.P50ms = float64(c.lats[n/2]) / float64(time.Millisecond)
		step.P99ms = float64(c.lats[n*99/100]) / float64(time.Millisecond)
	}
	if n := len(c.late); n > 0 {
		slices.Sort(c.late)
		step.LateP99ms = float64(max(c.late[n*99/100], 0)) / float64(time.Millisecond)
	}
	return step
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
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
	body := buf.Bytes()
	if !bytes.Contains(body, []byte(`"inWaitingRoom":true`)) {
		return "", 0, errAdmitted
	}
	after := time.Duration(0)
	if _, rest, ok := bytes.Cut(body, []byte(`"refreshIntervalSeconds":`)); ok {
		end := bytes.IndexAny(rest, ",}")
		if s, err := strconv.Atoi(string(rest[:max(end, 0)])); err == nil && s > 0 {
			after = time.Duration(s) * time.Second
		}
	}
	if after == 0 {
		return "", 0, fmt.Errorf("a waiting answer without refreshIntervalSeconds: %.200s", body)
	}
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "__usher_wr") {
			ck, _, _ := strings.Cut(sc, ";")
			return ck, after, nil
		}
	}
	return cookie, after, nil
}

func waitUp(ctx context.Context, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("usher at %s did not come up", url)
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// cpuSeconds returns a process's user and system CPU time in seconds
// (Linux), or 0.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 12th and 13th of them, in clock ticks (100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

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
