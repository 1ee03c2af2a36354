package selfbench

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// throughputRooms: "open" admits everyone (admitted visitors and new
// visitors are measured there); "full" holds its one place and admits one
// a minute, so that visitors there wait and check in: behind a line kept
// ahead of them (lineAhead), far back (see docs/scaling.md, "Check-ins
// far back in the line").
const throughputRooms = `  - id: open
    origin: %s
    routes:
      - path: /open
    total_active_users: 1000000000
    new_users_per_minute: 1000000000
    session_duration: 1h
    json_response_enabled: true
  - id: full
    origin: %s
    cookie_suffix: full
    routes:
      - path: /full
    total_active_users: 1
    new_users_per_minute: 1
    session_duration: 1h
    refresh_interval: 1s
    json_response_enabled: true
`

// lineAhead is the line kept ahead of the check-in target's waiters: with
// one place, one admission a minute and check-ins every second, a waiter
// with two or more ahead is far back.
const lineAhead = 8

// ThroughputTargets are the throughput scenario's targets (--targets).
var ThroughputTargets = []string{"origin", "proxy-tuned", "proxy-unpooled", "admitted", "new", "checkin", "nginx-proxy", "nginx-usher"}

// ThroughputResult is usher bench --scenario throughput's output. Each
// target's figures are medians over the rounds; the ratios are medians of
// the per-round ratios (each round loads every target once, interleaved,
// so a ratio compares loads made seconds apart on the same machine).
type ThroughputResult struct {
	Scenario  string  `json:"scenario"`
	Rounds    int     `json:"rounds"`
	Workers   int     `json:"workers"`
	DurationS float64 `json:"duration_s"`
	// Targets are the targets loaded when --targets names some; the
	// others' figures and ratios are zero. Omitted: all of them.
	Targets []string `json:"targets,omitempty"`
	Origin  Figure   `json:"origin_direct"`
	// ProxyTuned is the reference: an httputil.ReverseProxy with the
	// gate's own transport and buffer pool (gate.NewTransport,
	// gate.NewBufferPool). ProxyUnpooled is the same without the buffer
	// pool, as ReverseProxy is by default. Each runs in its own process.
	ProxyTuned    Figure `json:"proxy_tuned"`
	ProxyUnpooled Figure `json:"proxy_unpooled"`
	Admitted      Figure `json:"admitted"`
	NewVisitor    Figure `json:"new_visitor"`
	CheckIn       Figure `json:"checkin"`

	AdmittedVsProxyTuned    float64 `json:"admitted_vs_proxy_tuned"`
	NewVisitorVsProxyTuned  float64 `json:"new_visitor_vs_proxy_tuned"`
	CheckInVsProxyTuned     float64 `json:"checkin_vs_proxy_tuned"`
	ProxyTunedVsOrigin      float64 `json:"proxy_tuned_vs_origin"`
	AdmittedVsProxyUnpooled float64 `json:"admitted_vs_proxy_unpooled"`

	// Store is usher's store: "embedded", or "redis" with --redis.
	Store string `json:"store"`
	// Generator is what made the load: "in-process" (usher bench's own
	// goroutines, sharing the CPUs with the servers), or with --external
	// "wrk" or "go-process" (the Go generator in a process of its own).
	// GeneratorCPUs and ServerCPUs are the CPUs it and every server were
	// pinned to (taskset lists), empty when not pinned.
	Generator     string `json:"generator"`
	GeneratorCPUs string `json:"generator_cpus,omitempty"`
	ServerCPUs    string `json:"server_cpus,omitempty"`
	// On Redis, each usher target's requests served over the commands
	// usher's store sent to Redis during its loads (redis.Store.Calls),
	// all rounds together: a new visitor or a check-in needs one
	// admission script; admitted visitors' activity is batched, one call
	// per room a second. Omitted when no call was made.
	AdmittedPerRedisCall   float64 `json:"admitted_requests_per_redis_call,omitempty"`
	NewVisitorPerRedisCall float64 `json:"new_visitor_requests_per_redis_call,omitempty"`
	CheckInPerRedisCall    float64 `json:"checkin_requests_per_redis_call,omitempty"`

	// With --compare-embedded, the usher targets on a second usher, over
	// the embedded store, loaded in the same rounds; and the Redis-backed
	// usher's rates over them (medians of the per-round ratios).
	EmbeddedAdmitted          *Figure `json:"embedded_admitted,omitempty"`
	EmbeddedNewVisitor        *Figure `json:"embedded_new_visitor,omitempty"`
	EmbeddedCheckIn           *Figure `json:"embedded_checkin,omitempty"`
	AdmittedRedisVsEmbedded   float64 `json:"admitted_redis_vs_embedded,omitempty"`
	NewVisitorRedisVsEmbedded float64 `json:"new_visitor_redis_vs_embedded,omitempty"`
	CheckInRedisVsEmbedded    float64 `json:"checkin_redis_vs_embedded,omitempty"`

	// With nginx on PATH, two more targets in the same rounds: nginx as a
	// plain reverse proxy in front of the origin (nginx-proxy), and nginx
	// asking usher first with docs/integrations/nginx.conf (auth_request),
	// as an admitted visitor with its cookie. Omitted without nginx.
	NginxProxy *Figure `json:"nginx_proxy,omitempty"`
	NginxUsher *Figure `json:"nginx_usher,omitempty"`
	// NginxUsherVsNginxProxy is nginx + usher's rate over nginx alone's;
	// AdmittedVsNginxProxy usher's own (admitted visitor) over nginx's.
	NginxUsherVsNginxProxy float64 `json:"nginx_usher_vs_nginx_proxy,omitempty"`
	AdmittedVsNginxProxy   float64 `json:"admitted_vs_nginx_proxy,omitempty"`
	// UsherCPUPerAuthUs is usher's own CPU time per request through
	// nginx + usher, in microseconds, the median of the rounds: nginx
	// keeps usher's answers for admitted visitors a few seconds, so most
	// requests cost usher nothing. Omitted when usher runs in the bench
	// process (--redis).
	UsherCPUPerAuthUs float64 `json:"usher_cpu_per_auth_us,omitempty"`
}

// Figure is one target's median requests per second and latencies, and
// the CPU time its server process spent per request.
type Figure struct {
	RPS    float64 `json:"rps"`
	P50ms  float64 `json:"p50_ms"`
	P99ms  float64 `json:"p99_ms"`
	Errors int     `json:"errors"`
	// CPUus is the CPU time (user and system, from /proc/<pid>/stat) the
	// target's own server process spent per request, in microseconds, the
	// median of the rounds: usher's for usher's targets, the reference
	// proxy's, nginx's (master and workers), the origin's with --external.
	// Omitted for the origin in the bench process, and for usher when it
	// runs there (--redis).
	CPUus float64 `json:"cpu_us_per_request,omitempty"`
}

// Throughput runs the throughput scenario: rounds of loads of the origin,
// the reference proxies, usher's paths and (with nginx on PATH) nginx
// alone and asking usher, each round loading every target once.
func Throughput(ctx context.Context, f *Config, p *Product) (*ThroughputResult, error) {
	nginxBin, _ := exec.LookPath("nginx")
	if f.Redis != "" {
		// On Redis, usher runs in the bench process, with no forward-auth
		// listener of its own for nginx to ask.
		nginxBin = ""
	}
	opts := selfOptions{redis: f.Redis, cluster: f.RedisCluster, compareEmbedded: f.CompareEmbedded,
		proxies: true, separate: true}
	var gen *externalGenerator
	var pin pinning
	if f.External {
		pin = externalPinning()
		opts.originProc, opts.pin = true, pin.servers
		gen = &externalGenerator{cpus: pin.generator, workers: f.Workers, threads: min(2, f.Workers), dur: f.Duration}
		gen.wrk, _ = exec.LookPath("wrk")
	}
	if nginxBin != "" {
		// nginx asks usher's forward auth from loopback.
		opts.trusted = []string{"127.0.0.1/32"}
	}
	env, err := startSelfWith(ctx, throughputRooms, opts, p)
	if err != nil {
		return nil, err
	}
	defer env.Stop()
	var ngx *nginxBench
	if nginxBin != "" {
		if ngx, err = startNginxBench(ctx, pin.servers, nginxBin, env); err != nil {
			return nil, fmt.Errorf("nginx targets: %w", err)
		}
		defer ngx.stop()
	}
	// Hold the full room's one place.
	for _, u := range []string{env.UsherURL, env.embeddedURL} {
		if u == "" {
			continue
		}
		resp, err := http.Get(u + "/full")
		if err != nil {
			return nil, err
		}
		resp.Body.Close()
	}
	// cpu reads the CPU time of a target's server process so far; nil when
	// it is not apart from this one.
	type cpuFunc func() time.Duration
	var usherCPU cpuFunc
	if env.usherProc != nil {
		usherCPU = env.usherProc.cpu
	}
	type target struct {
		name string
		cfg  bench.LoadConfig
		cpu  cpuFunc
	}
	var originCPU cpuFunc
	if env.originProc != nil {
		originCPU = env.originProc.cpu
	}
	targets := []target{
		{"origin", bench.LoadConfig{URL: env.originURL + "/open", Expect: fromOrigin}, originCPU},
		{"proxy-tuned", bench.LoadConfig{URL: env.tuned.url + "/open", Expect: fromOrigin}, env.tuned.cpu},
		{"proxy-unpooled", bench.LoadConfig{URL: env.unpooled.url + "/open", Expect: fromOrigin}, env.unpooled.cpu},
		{"admitted", bench.LoadConfig{URL: env.UsherURL + "/open", Cookies: true, Expect: fromOrigin}, usherCPU},
		{"new", bench.LoadConfig{URL: env.UsherURL + "/open", Expect: fromOrigin}, usherCPU},
		{"checkin", bench.LoadConfig{URL: env.UsherURL + "/full", Cookies: true, Expect: isWaiting}, usherCPU},
	}
	if ngx != nil {
		targets = append(targets,
			target{"nginx-proxy", bench.LoadConfig{URL: ngx.plainURL + "/open", Expect: fromOrigin}, ngx.cpu},
			target{"nginx-usher", bench.LoadConfig{URL: ngx.usherURL + "/open", Cookies: true, Expect: fromOrigin}, ngx.cpu})
	}
	if len(f.targets) > 0 {
		targets = slices.DeleteFunc(targets, func(tg target) bool { return !slices.Contains(f.targets, tg.name) })
	}
	if env.embeddedURL != "" {
		// Each usher target is followed by its twin on the embedded
		// store, so that a ratio compares loads made one after the other.
		var paired []target
		for _, tg := range targets {
			paired = append(paired, tg)
			if strings.HasPrefix(tg.cfg.URL, env.UsherURL+"/") {
				tg.name += "-embedded"
				tg.cfg.URL = env.embeddedURL + strings.TrimPrefix(tg.cfg.URL, env.UsherURL)
				paired = append(paired, tg)
			}
		}
		targets = paired
	}
	byName := map[string][]bench.LoadResult{}
	served, calls := map[string]int64{}, map[string]int64{}
	// CPU time per request of each target's process, and of usher's
	// through nginx, each round.
	cpuPerReq := map[string][]float64{}
	var usherPerAuth []float64
	line := p.progress("usher bench: ")
	defer line.Done()
	loads, done := f.Rounds*len(targets), 0
	for round := range f.Rounds {
		order := slices.Clone(targets)
		if round%2 == 1 && env.embeddedURL != "" {
			// Every other round, the embedded twin goes first.
			for i := range order {
				if strings.HasSuffix(order[i].name, "-embedded") {
					order[i-1], order[i] = order[i], order[i-1]
				}
			}
		}
		for _, tg := range order {
			line.Update(fmt.Sprintf("round %d of %d, loading %s (%d of %d loads done)", round+1, f.Rounds, tg.name, done, loads))
			done++
			cfg := tg.cfg
			cfg.Workers, cfg.Duration = f.Workers, f.Duration
			cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
			cfg.Transport.(*http.Transport).MaxIdleConnsPerHost = f.Workers
			if strings.HasPrefix(tg.name, "checkin") {
				// Waiters check in with JSON, as apps do.
				cfg.Transport = acceptJSON{cfg.Transport}
			}
			var stopLine func()
			if strings.HasPrefix(tg.name, "checkin") {
				// The waiters measured arrive behind a line that checks in
				// as pages do: far back, as most of a long line is.
				if stopLine, err = bench.StartLine(ctx, cfg.Transport, cfg.URL, lineAhead, 900*time.Millisecond); err != nil {
					return nil, fmt.Errorf("round %d, %s: the line ahead: %w", round+1, tg.name, err)
				}
			}
			var ext externalLoad
			if gen != nil {
				// The visitor's cookie and a first answer, before the
				// clocks start.
				if ext, err = gen.prepare(ctx, cfg, strings.HasPrefix(tg.name, "checkin")); err != nil {
					return nil, fmt.Errorf("round %d, %s: %w", round+1, tg.name, err)
				}
			}
			var before int64
			if env.calls != nil {
				before = env.calls()
			}
			var cpuBefore, usherBefore time.Duration
			if tg.cpu != nil {
				cpuBefore = tg.cpu()
			}
			if usherCPU != nil {
				usherBefore = usherCPU()
			}
			var res bench.LoadResult
			if gen != nil {
				res, err = gen.run(ctx, ext)
			} else {
				res, err = bench.Load(ctx, cfg)
			}
			if stopLine != nil {
				stopLine()
			}
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, tg.name, err)
			}
			// Every request counts, the cookie visitors' first ones too.
			n := float64(res.Requests + res.Errors)
			if cfg.Cookies && gen == nil {
				n += float64(cfg.Workers)
			}
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) / max(n, 1) }
			if tg.cpu != nil {
				cpuPerReq[tg.name] = append(cpuPerReq[tg.name], us(tg.cpu()-cpuBefore))
			}
			if tg.name == "nginx-usher" && usherCPU != nil {
				usherPerAuth = append(usherPerAuth, us(usherCPU()-usherBefore))
			}
			if env.calls != nil {
				// Every answer counts, the unexpected ones too, and so do
				// the cookie visitors' first requests, made before the
				// clock starts: served and calls alike.
				calls[tg.name] += env.calls() - before
				served[tg.name] += int64(n)
			}
			byName[tg.name] = append(byName[tg.name], res)
		}
	}
	ratio := func(a, b string) float64 {
		var rs []float64
		for i := range min(len(byName[a]), len(byName[b])) {
			rs = append(rs, byName[a][i].RPS/byName[b][i].RPS)
		}
		return median(rs)
	}
	fig := func(name string) Figure {
		x := medianFigure(byName[name])
		x.CPUus = median(cpuPerReq[name])
		return x
	}
	res := &ThroughputResult{
		Scenario:                "throughput",
		Store:                   "embedded",
		Generator:               "in-process",
		Rounds:                  f.Rounds,
		Workers:                 f.Workers,
		DurationS:               f.Duration.Seconds(),
		Origin:                  fig("origin"),
		ProxyTuned:              fig("proxy-tuned"),
		ProxyUnpooled:           fig("proxy-unpooled"),
		Admitted:                fig("admitted"),
		NewVisitor:              fig("new"),
		CheckIn:                 fig("checkin"),
		AdmittedVsProxyTuned:    ratio("admitted", "proxy-tuned"),
		NewVisitorVsProxyTuned:  ratio("new", "proxy-tuned"),
		CheckInVsProxyTuned:     ratio("checkin", "proxy-tuned"),
		ProxyTunedVsOrigin:      ratio("proxy-tuned", "origin"),
		AdmittedVsProxyUnpooled: ratio("admitted", "proxy-unpooled"),
		Targets:                 f.targets,
	}
	if gen != nil {
		res.Generator, res.GeneratorCPUs, res.ServerCPUs = gen.name(), pin.generator, pin.servers
	}
	if ngx != nil {
		np, nu := fig("nginx-proxy"), fig("nginx-usher")
		res.NginxProxy, res.NginxUsher = &np, &nu
		res.NginxUsherVsNginxProxy = ratio("nginx-usher", "nginx-proxy")
		res.AdmittedVsNginxProxy = ratio("admitted", "nginx-proxy")
		res.UsherCPUPerAuthUs = median(usherPerAuth)
	}
	if env.calls == nil {
		return res, nil
	}
	perCall := func(name string) float64 {
		if calls[name] == 0 {
			return 0 // none: omitted
		}
		return float64(served[name]) / float64(calls[name])
	}
	res.Store = "redis"
	res.AdmittedPerRedisCall = perCall("admitted")
	res.NewVisitorPerRedisCall = perCall("new")
	res.CheckInPerRedisCall = perCall("checkin")
	if env.embeddedURL != "" {
		fig := func(name string) *Figure { x := medianFigure(byName[name]); return &x }
		res.EmbeddedAdmitted = fig("admitted-embedded")
		res.EmbeddedNewVisitor = fig("new-embedded")
		res.EmbeddedCheckIn = fig("checkin-embedded")
		res.AdmittedRedisVsEmbedded = ratio("admitted", "admitted-embedded")
		res.NewVisitorRedisVsEmbedded = ratio("new", "new-embedded")
		res.CheckInRedisVsEmbedded = ratio("checkin", "checkin-embedded")
	}
	return res, nil
}

// isWaiting reports whether an answer is a waiter's JSON check-in.
func isWaiting(r *http.Response) bool {
	return r.StatusCode == http.StatusOK && r.Header.Get(bench.HeaderOrigin) == "" &&
		strings.HasPrefix(r.Header.Get("Content-Type"), "application/json")
}

// acceptJSON adds Accept: application/json to every request.
type acceptJSON struct{ rt http.RoundTripper }

func (a acceptJSON) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	return a.rt.RoundTrip(r)
}

func medianFigure(rs []bench.LoadResult) Figure {
	var rps, p50, p99 []float64
	errs := 0
	for _, r := range rs {
		rps, p50, p99 = append(rps, r.RPS), append(p50, r.P50ms), append(p99, r.P99ms)
		errs += r.Errors
	}
	return Figure{RPS: median(rps), P50ms: median(p50), P99ms: median(p99), Errors: errs}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
