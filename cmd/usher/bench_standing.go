package main

import (
	"context"
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
	"syscall"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// StandingResult is usher bench --scenario standing-room's output: for each
// number of waiters tried, the check-in latency at the rate those waiters
// check in (waiters / refresh interval) and the usher process's memory.
type StandingResult struct {
	Scenario   string         `json:"scenario"`
	RefreshS   float64        `json:"refresh_interval_s"`
	BoundMs    float64        `json:"bound_p99_ms"`
	MaxWaiters int            `json:"max_waiters_within_bound"`
	RSSAtMaxMB float64        `json:"rss_mb_at_max"`
	Steps      []StandingStep `json:"steps"`
}

// StandingStep is one number of waiters.
type StandingStep struct {
	Waiters     int     `json:"waiters"`
	RateRPS     float64 `json:"checkin_rate_rps"`
	AchievedRPS float64 `json:"achieved_rps"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Errors      int     `json:"errors"`
	RSSMB       float64 `json:"rss_mb"`
}

const standingConfig = `listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: standing
    origin: %s
    routes:
      - path: /
    total_active_users: 1
    new_users_per_minute: 1000000
    session_duration: 24h
    refresh_interval: %s
    json_response_enabled: true
`

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
	body := fmt.Sprintf(standingConfig, addr, filepath.Join(dir, "data"), "http://"+oln.Addr().String(), f.refresh)
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
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 512, 512
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// The room's one place is taken for the whole run.
	if _, err := get(ctx, client, base, ""); err != nil {
		return nil, err
	}
	res := &StandingResult{Scenario: "standing-room", RefreshS: f.refresh.Seconds(), BoundMs: float64(f.bound) / float64(time.Millisecond)}
	var cookies []string
	line := m.progress("usher bench: ")
	defer line.Done()
	for _, n := range []int{1000, 2000, 5000, 10000, 20000, 50000, 100000, 200000, 500000} {
		if n > f.maxWaiters {
			break
		}
		line.Update(fmt.Sprintf("%s waiters (p99 so far within the bound up to %s)", bench.Count(n), bench.Count(res.MaxWaiters)))
		// Bring in the new waiters.
		more, err := prime(ctx, client, base, n-len(cookies))
		if err != nil {
			return nil, err
		}
		cookies = append(cookies, more...)
		step := checkIns(ctx, client, base, cookies, f.refresh)
		step.RSSMB = rssMB(cmd.Process.Pid)
		res.Steps = append(res.Steps, step)
		if step.P99ms > res.BoundMs || step.Errors > 0 || step.AchievedRPS < 0.9*step.RateRPS {
			break
		}
		res.MaxWaiters, res.RSSAtMaxMB = n, step.RSSMB
	}
	return res, nil
}

// prime brings n new waiters into the room and returns their cookies.
func prime(ctx context.Context, c *http.Client, url string, n int) ([]string, error) {
	out := make([]string, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, 64)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ck, err := get(ctx, c, url, "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			out[i] = ck
		})
	}
	wg.Wait()
	return out, first
}

// checkIns has every waiter check in once, spread evenly over one refresh
// interval (open loop: at the rate the waiters would), and measures.
func checkIns(ctx context.Context, c *http.Client, url string, cookies []string, refresh time.Duration) StandingStep {
	n := len(cookies)
	step := StandingStep{Waiters: n, RateRPS: float64(n) / refresh.Seconds()}
	gap := refresh / time.Duration(n)
	lats := make([]time.Duration, 0, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * gap)); d > 0 {
			time.Sleep(d)
		}
		wg.Go(func() {
			t0 := time.Now()
			ck, err := get(ctx, c, url, cookies[i])
			lat := time.Since(t0)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				step.Errors++
				return
			}
			cookies[i] = ck
			lats = append(lats, lat)
		})
	}
	wg.Wait()
	step.AchievedRPS = float64(len(lats)) / time.Since(start).Seconds()
	if len(lats) > 0 {
		slices.Sort(lats)
		step.P50ms = float64(lats[len(lats)/2]) / float64(time.Millisecond)
		step.P99ms = float64(lats[len(lats)*99/100]) / float64(time.Millisecond)
	}
	return step
}

// get sends one request with the ticket cookie (if any), expects a waiting
// answer, and returns the ticket cookie it sets (or the old one).
func get(ctx context.Context, c *http.Client, url, cookie string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Accept", "application/json")
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("status %d", resp.StatusCode)
	}
	for _, sc := range resp.Cookies() {
		if strings.HasPrefix(sc.Name, "__usher_wr") {
			return sc.Name + "=" + sc.Value, nil
		}
	}
	return cookie, nil
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
