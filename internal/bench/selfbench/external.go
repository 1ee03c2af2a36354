package selfbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// The throughput scenario's external mode (--external) measures every
// target from outside its process, as operators do with wrk: the load
// generator runs in a process of its own, pinned to the first CPU, and
// every server (the origin, the reference proxies, usher, nginx) is pinned
// to the last one, so that each target's rate is what one core of it
// serves and its CPU per request is its own.

// pinning is where the external mode runs its processes: taskset CPU
// lists, empty when not pinned (taskset missing, or one CPU).
type pinning struct {
	generator, servers string
}

// externalPinning pins the generator to CPU 0 and the servers to the last
// CPU, when taskset (util-linux) is installed and there are two CPUs or
// more.
func externalPinning() pinning {
	if runtime.NumCPU() < 2 {
		return pinning{}
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return pinning{}
	}
	return pinning{generator: "0", servers: strconv.Itoa(runtime.NumCPU() - 1)}
}

// pinnedCommand is exec.Command(name, args...) on the CPUs cpus (a
// taskset list), every thread of it included; unpinned when cpus is
// empty. taskset execs the command: its pid is the command's.
func pinnedCommand(cpus, name string, args ...string) *exec.Cmd {
	if cpus == "" {
		return exec.Command(name, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpus, name}, args...)...)
}

// externalLoad is one load made from outside: the URL, the headers every
// request carries (the visitor's cookie, Accept), and what an answer must
// be.
type externalLoad struct {
	url     string
	headers map[string]string
	expect  func(*http.Response) bool
}

// externalGenerator runs loads from a process of its own: wrk when it is
// installed, else this executable's Go generator (bench-target load).
type externalGenerator struct {
	wrk     string // wrk's path; empty: the Go generator
	cpus    string
	workers int
	threads int
	dur     time.Duration
}

// name is the generator's name in the results.
func (g *externalGenerator) name() string {
	if g.wrk != "" {
		return "wrk"
	}
	return "go-process"
}

// prepare makes a load of cfg ready to run from outside: a visitor's
// cookie when cfg asks for one (fetched now, so that its session is fresh
// and not due to renew during the load), and a first answer checked
// against cfg.Expect.
func (g *externalGenerator) prepare(ctx context.Context, cfg bench.LoadConfig, acceptJSON bool) (externalLoad, error) {
	l := externalLoad{url: cfg.URL, headers: map[string]string{}, expect: cfg.Expect}
	if acceptJSON {
		l.headers["Accept"] = "application/json"
	}
	get := func() (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.URL, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range l.headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp, nil
	}
	if cfg.Cookies {
		resp, err := get()
		if err != nil {
			return l, err
		}
		var pairs []string
		for _, c := range resp.Cookies() {
			pairs = append(pairs, c.Name+"="+c.Value)
		}
		if len(pairs) == 0 {
			return l, fmt.Errorf("%s: no cookie on the first answer (%d)", cfg.URL, resp.StatusCode)
		}
		l.headers["Cookie"] = strings.Join(pairs, "; ")
	}
	resp, err := get()
	if err != nil {
		return l, err
	}
	if cfg.Expect != nil && !cfg.Expect(resp) {
		return l, fmt.Errorf("%s: the answer (%d) is not the kind this load measures", cfg.URL, resp.StatusCode)
	}
	return l, nil
}

// run loads l for the generator's duration.
func (g *externalGenerator) run(ctx context.Context, l externalLoad) (bench.LoadResult, error) {
	if g.wrk != "" {
		args := []string{"-t", strconv.Itoa(g.threads), "-c", strconv.Itoa(g.workers),
			"-d", strconv.Itoa(max(int(g.dur/time.Second), 1)) + "s", "--latency"}
		for k, v := range l.headers {
			args = append(args, "-H", k+": "+v)
		}
		cmd := pinnedCommand(g.cpus, g.wrk, append(args, l.url)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return bench.LoadResult{}, fmt.Errorf("wrk: %v: %s", err, strings.TrimSpace(string(out)))
		}
		return parseWrk(string(out))
	}
	exe, err := os.Executable()
	if err != nil {
		return bench.LoadResult{}, err
	}
	args := []string{"bench-target", "load", "--url", l.url, "--workers", strconv.Itoa(g.workers), "--duration", g.dur.String()}
	for k, v := range l.headers {
		args = append(args, "--header", k+": "+v)
	}
	cmd := pinnedCommand(g.cpus, exe, args...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return bench.LoadResult{}, fmt.Errorf("load generator: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	var res bench.LoadResult
	if err := json.Unmarshal(out, &res); err != nil {
		return bench.LoadResult{}, fmt.Errorf("load generator: %w", err)
	}
	return res, nil
}

// parseWrk reads wrk's report (with --latency): its total requests, rate,
// 50th and 99th percentile latencies, and the answers that were not 2xx or
// 3xx or failed (socket errors) as errors.
func parseWrk(out string) (bench.LoadResult, error) {
	var r bench.LoadResult
	var seenRate, seenTotal bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: rate %q", f[1])
			}
			r.RPS, seenRate = v, true
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return r, fmt.Errorf("wrk: requests %q", f[0])
			}
			r.Requests, seenTotal = n, true
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			ms, err := wrkDuration(f[1])
			if err != nil {
				return r, err
			}
			if f[0] == "50%" {
				r.P50ms = ms
			} else {
				r.P99ms = ms
			}
		case len(f) == 5 && f[0] == "Non-2xx":
			n, _ := strconv.Atoi(f[4])
			r.Errors += n
		case len(f) > 2 && f[0] == "Socket" && f[1] == "errors:":
			for _, part := range strings.Split(strings.Join(f[2:], " "), ",") {
				kv := strings.Fields(part)
				if len(kv) == 2 {
					n, _ := strconv.Atoi(kv[1])
					r.Errors += n
				}
			}
		}
	}
	if !seenRate || !seenTotal {
		return r, fmt.Errorf("wrk: no rate in its report: %.300q", out)
	}
	// wrk counts non-2xx answers among its requests; usher bench counts
	// them apart.
	r.Requests = max(r.Requests-r.Errors, 0)
	return r, nil
}

// wrkDuration reads one of wrk's latencies (850.00us, 1.23ms, 2.00s, 1.5m)
// in milliseconds.
func wrkDuration(s string) (float64, error) {
	for _, u := range []struct {
		suffix string
		ms     float64
	}{{"us", 1e-3}, {"ms", 1}, {"s", 1e3}, {"m", 60e3}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				break
			}
			return f * u.ms, nil
		}
	}
	return 0, fmt.Errorf("wrk: latency %q", s)
}

// loadTarget is bench-target load: the Go generator in a process of its
// own, for the external mode without wrk. It loads url with workers
// requests in flight for dur, each request with headers, and prints the
// result as JSON.
func loadTarget(ctx context.Context, stdout io.Writer, url string, workers int, dur time.Duration, headers []string) error {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = workers
	hdr := http.Header{}
	for _, h := range headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("bench-target load: --header %q: want Name: value", h)
		}
		hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	res, err := bench.Load(ctx, bench.LoadConfig{URL: url, Workers: workers, Duration: dur,
		Transport: withHeaders{tr, hdr}, Expect: func(r *http.Response) bool { return r.StatusCode/100 == 2 }})
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(res)
}

// withHeaders adds its headers to every request.
type withHeaders struct {
	rt  http.RoundTripper
	hdr http.Header
}

func (h withHeaders) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range h.hdr {
		r.Header[k] = vs
	}
	return h.rt.RoundTrip(r)
}
