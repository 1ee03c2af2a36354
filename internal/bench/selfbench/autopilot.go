package selfbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
)

// The autopilot scenario's defaults, used where its flags are not set:
// an origin of 10 workers at 160-240 ms a request (50 requests a second)
// that fails a request after 1 s without a worker, and 200 visitors in
// 10 s who browse 20-40 s with a request about every 2 s: the origin
// sustains about 88 of them at once, 176 a minute, so a line of 200
// drains within the 3 minutes of a run at the pace the origin sustains,
// and not at a third of it.
const (
	AutopilotOrigin   = "10,160ms-240ms,1s"
	autopilotArrivals = "flash:200@10s"
	autopilotBrowse   = "20s-40s"
	autopilotEvery    = "exp:2s"
	AutopilotHorizon  = 3 * time.Minute
	// autopilotLoad is the share of the origin's capacity the limits are
	// sized to sustain.
	autopilotLoad = 0.8
	// autopilotControlEvery is the pace of the requests that load the
	// control origin whose p99 is the healthy one (10 a second, a fifth
	// of its capacity), sent on time whether the ones before have been
	// answered or not; autopilotControlMax bounds those in flight.
	autopilotControlEvery = 100 * time.Millisecond
	autopilotControlMax   = 200
)

// The cases: the room's limits 3x above and 3x below what the origin
// sustains.
var autopilotCases = []string{"high", "low"}

// AutopilotCase is one case of usher bench --scenario autopilot: the
// limits and each side's figures.
type AutopilotCase struct {
	Case string `json:"case"`
	// SustainedActive and SustainedPerMinute are what the origin
	// sustains at autopilotLoad of its capacity; Limits the room's.
	SustainedActive    int          `json:"sustained_active"`
	SustainedPerMinute int          `json:"sustained_per_minute"`
	Limits             bench.Limits `json:"limits"`
	Autopilot          string       `json:"autopilot"`
	Sides              []Side       `json:"sides"`
}

// Side is one side of an autopilot case, fixed limits or autopilot: the
// origin's health and the line's figures, in the fields of usher simulate
// --compare's sides.
type Side struct {
	Name string `json:"name"`
	// OriginP99Ms and HealthyP99Ms: the origin's p99 over the run and
	// without load (the control origin's); P99Ratio divides them.
	OriginP50Ms  float64 `json:"origin_p50_ms"`
	OriginP99Ms  float64 `json:"origin_p99_ms"`
	HealthyP99Ms float64 `json:"healthy_p99_ms"`
	P99Ratio     float64 `json:"p99_ratio"`
	ErrorRate    float64 `json:"origin_error_rate"`
	// ThroughputPerS is the successful origin requests a second while
	// the origin was busy.
	ThroughputPerS float64 `json:"origin_throughput_per_s"`
	Requests       int64   `json:"origin_requests"`
	QueuePeak      int     `json:"queue_peak"`
	Drained        bool    `json:"drained"`
	DrainedS       float64 `json:"drained_s"`
	WaitP50S       float64 `json:"wait_p50_s"`
	WaitP90S       float64 `json:"wait_p90_s"`
	Admitted       int     `json:"admitted"`
	// Visitors is the run's visitors.
	Visitors int `json:"visitors,omitempty"`
	Changes  int `json:"autopilot_changes"`
	// Seconds is the run second by second.
	Seconds []bench.OriginSecond `json:"seconds,omitempty"`
	origin  *bench.OriginStats
}

// AutopilotResult is usher bench --scenario autopilot's output.
type AutopilotResult struct {
	Scenario string          `json:"scenario"`
	Origin   string          `json:"origin"`
	Capacity float64         `json:"origin_capacity_per_s"`
	Arrivals string          `json:"arrivals"`
	Browse   string          `json:"browse"`
	Every    string          `json:"every"`
	Seed     uint64          `json:"seed"`
	Horizon  time.Duration   `json:"horizon_ns"`
	Cases    []AutopilotCase `json:"cases"`
}

// Autopilot runs the autopilot scenario: each case twice against fresh
// origins with the same arrivals, the room's limits fixed, then governed
// by its autopilot.
func Autopilot(ctx context.Context, f *Config, p *Product) (*AutopilotResult, error) {
	res := &AutopilotResult{Scenario: "autopilot", Arrivals: f.Arrivals, Browse: f.Browse, Every: f.Every, Seed: f.Seed,
		Origin:   fmt.Sprintf("%d workers, service %v, timeout %v", f.Origin.Workers, f.Origin.Service, f.Origin.Timeout),
		Capacity: f.Origin.Capacity(), Horizon: f.Horizon}
	// A browsing visitor sends a request every Every plus its answer's
	// latency; at autopilotLoad of the capacity the origin carries
	// this many of them, each for Browse.
	cycle := f.model.RequestEvery.Mean() + f.Origin.Service.Mean()
	active := int(autopilotLoad * f.Origin.Capacity() * cycle.Seconds())
	perMinute := int(float64(active) / f.model.Browse.Mean().Minutes())
	for _, name := range autopilotCases {
		if f.Case != "both" && f.Case != name {
			continue
		}
		c := AutopilotCase{Case: name, SustainedActive: active, SustainedPerMinute: perMinute}
		var block string
		if name == "high" {
			c.Limits.TotalActiveUsers, c.Limits.NewUsersPerMinute = 3*active, 3*perMinute
			block = "{baseline_samples: 10}"
		} else {
			lt, lr := max(1, active/3), max(1, perMinute/3)
			c.Limits.TotalActiveUsers, c.Limits.NewUsersPerMinute = lt, lr
			// The configured limits are safe: they are the floors, and
			// the ceilings are 1.5x what the origin sustains.
			block = fmt.Sprintf("{baseline_samples: 10, concurrency: true, min_total_active_users: %d, min_new_users_per_minute: %d, max_total_active_users: %d, max_new_users_per_minute: %d}",
				lt, lr, active*3/2, perMinute*3/2)
		}
		c.Limits.SessionDuration, c.Limits.RefreshInterval = minSession, f.Refresh
		c.Autopilot = block
		c.Sides = make([]Side, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i, auto := range []bool{false, true} {
			if !f.SidesAtOnce {
				c.Sides[i], errs[i] = autopilotSide(ctx, f, p, c, auto, true)
				continue
			}
			// At once: no progress lines (two would interleave).
			wg.Go(func() { c.Sides[i], errs[i] = autopilotSide(ctx, f, p, c, auto, false) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		if f.Plot != "" {
			if err := writeAutopilotPlot(casePlot(f.Plot, name), c, res); err != nil {
				return nil, fmt.Errorf("--plot: %w", err)
			}
		}
		res.Cases = append(res.Cases, c)
	}
	return res, nil
}

// casePlot is the plot file of a case: the case's name before the
// extension of --plot (autopilot.svg: autopilot-high.svg).
func casePlot(plot, name string) string {
	ext := filepath.Ext(plot)
	return strings.TrimSuffix(plot, ext) + "-" + name + ext
}

func writeAutopilotPlot(path string, c AutopilotCase, res *AutopilotResult) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	runs := make([]bench.CompareRun, len(c.Sides))
	for i, s := range c.Sides {
		runs[i] = bench.CompareRun{Name: s.Name, Origin: s.origin}
	}
	title := fmt.Sprintf("usher bench --scenario autopilot: limits 3x too %s, %s", c.Case, res.Arrivals)
	if err := bench.PlotCompareSVG(out, runs, title); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// autopilotSide runs one side of a case: usher in this process (run by p)
// in front of a fresh origin, loaded by the arrivals, and meanwhile a
// control origin of the same model at low load (a request every
// autopilotControlEvery), whose p99 over the same time is the healthy one:
// the machine's own latency (a shared box, its cores busy with other work)
// weighs on both alike.
func autopilotSide(ctx context.Context, f *Config, p *Product, c AutopilotCase, auto, progress bool) (Side, error) {
	name := "fixed limits"
	if auto {
		name = "autopilot"
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	serve := func(h http.Handler) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		wg.Go(func() { _ = server.Serve(ctx, ln, h, quiet) })
		return "http://" + ln.Addr().String(), nil
	}
	control := bench.NewLiveOrigin(f.Origin, f.Seed+1)
	controlURL, err := serve(control)
	if err != nil {
		return Side{}, err
	}
	origin := bench.NewLiveOrigin(f.Origin, f.Seed)
	originURL, err := serve(origin)
	if err != nil {
		return Side{}, err
	}
	dir, err := os.MkdirTemp("", "usher-bench-")
	if err != nil {
		return Side{}, err
	}
	defer os.RemoveAll(dir)
	block := ""
	if auto {
		block = "    autopilot: " + c.Autopilot + "\n"
	}
	yaml := fmt.Sprintf(`listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: bench-autopilot-token
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: %d
    session_duration: %s
    refresh_interval: %s
    json_response_enabled: true
%s`, dir, originURL, c.Limits.TotalActiveUsers, c.Limits.NewUsersPerMinute, c.Limits.SessionDuration, c.Limits.RefreshInterval, block)
	cfg, err := config.Parse(strings.NewReader(yaml))
	if err != nil {
		return Side{}, fmt.Errorf("bench config: %w", err)
	}
	type addrs struct{ pub, adm string }
	ready := make(chan addrs, 1)
	errc := make(chan error, 1)
	wg.Go(func() { errc <- p.Serve(ctx, cfg, quiet, func(pub, adm string) { ready <- addrs{pub, adm} }) })
	var at addrs
	select {
	case at = <-ready:
	case err := <-errc:
		return Side{}, fmt.Errorf("start usher: %w", err)
	case <-time.After(20 * time.Second):
		return Side{}, fmt.Errorf("start usher: not listening after 20 s")
	}

	// Second by second: the origin's figures with the room's.
	var changes int
	sampled := make(chan struct{})
	sctx, stopSampling := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case now := <-tick.C:
				st, err := roomStatus(sctx, "http://"+at.adm, "sale")
				if err != nil {
					continue
				}
				origin.Second(now, int(st.Waiting), st.Active, st.NewUsersPerMinute, st.TotalActiveUsers)
				if st.Autopilot != nil {
					changes = st.Autopilot.Changes
				}
			}
		}
	}()
	cctx, stopControl := context.WithCancel(ctx)
	controlDone := make(chan error, 1)
	go func() { controlDone <- autopilotControl(cctx, controlURL) }()
	var line Progress = noProgress{}
	if progress {
		line = p.progress("usher bench: limits 3x too " + c.Case + ", " + name + ": ")
	}
	tl, err := bench.Run(ctx, bench.Config{
		Target:   "http://" + at.pub + "/",
		Arrivals: f.arr,
		Model:    f.model,
		Seed:     f.Seed,
		Horizon:  f.Horizon,
		MaxConns: 1024,
		Progress: func(p bench.Progress) { line.Update(p.String()) },
	})
	line.Done()
	stopSampling()
	<-sampled
	stopControl()
	if cerr := <-controlDone; err == nil && cerr != nil {
		err = fmt.Errorf("control origin: %w", cerr)
	}
	if err != nil {
		return Side{}, err
	}
	healthy := control.Percentile(99)
	if healthy <= 0 {
		return Side{}, errors.New("control origin: no answer")
	}
	o := origin.Stats(healthy)
	o.Changes = changes
	r := bench.Report(tl, c.Limits)
	s := Side{Name: name, OriginP50Ms: o.P50Ms, OriginP99Ms: o.P99Ms, HealthyP99Ms: o.HealthyP99Ms, ErrorRate: o.ErrorRate,
		ThroughputPerS: o.ThroughputPerS, Requests: o.Requests, QueuePeak: r.QueuePeak, Drained: r.QueueDrained,
		DrainedS: r.QueueDrainedS, WaitP50S: r.WaitP50S, WaitP90S: r.WaitP90S, Admitted: r.Admitted, Visitors: r.Visitors,
		Changes: o.Changes, Seconds: o.Seconds, origin: o}
	if o.HealthyP99Ms > 0 {
		s.P99Ratio = o.P99Ms / o.HealthyP99Ms
	}
	return s, nil
}

// autopilotControl loads the control origin at u with a request every
// autopilotControlEvery until ctx ends, each sent on time whether the
// ones before were answered or not (open loop, like the visitors): a
// client that waited for each answer would send nothing while the machine
// stalls, and count a stall once where the visitors' requests count it
// once for each request that arrives during it.
func autopilotControl(ctx context.Context, u string) error {
	client := &http.Client{Timeout: 10 * time.Second}
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, autopilotControlMax)
	var failed atomic.Pointer[error]
	tick := time.NewTicker(autopilotControlEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			if e := failed.Load(); e != nil {
				return *e
			}
			return nil
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			continue // as many in flight as allowed: this one is skipped
		}
		wg.Go(func() {
			defer func() { <-slots }()
			req, _ := http.NewRequestWithContext(ctx, "GET", u+"/", nil)
			req.Header.Set(bench.HeaderVisitor, "control")
			// The origin records each answer, a 504 of a machine
			// stalled for over a second included; only a request that
			// could not be sent at all is the bench's failure.
			resp, err := client.Do(req)
			if err != nil {
				if ctx.Err() == nil {
					failed.CompareAndSwap(nil, &err)
				}
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
}

// benchRoomStatus is the part of a room's status JSON the bench reads.
type benchRoomStatus struct {
	Active            int64 `json:"active"`
	Waiting           int64 `json:"waiting"`
	TotalActiveUsers  int   `json:"total_active_users"`
	NewUsersPerMinute int   `json:"new_users_per_minute"`
	Autopilot         *struct {
		Changes int `json:"changes"`
	} `json:"autopilot"`
}

// roomStatus reads a room's status from the admin listener at base.
func roomStatus(ctx context.Context, base, room string) (*benchRoomStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/rooms/"+room+"/status", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer bench-autopilot-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d", resp.StatusCode)
	}
	var st benchRoomStatus
	return &st, json.NewDecoder(resp.Body).Decode(&st)
}

// WriteAutopilotSummary prints an autopilot result, one table a case.
func WriteAutopilotSummary(w io.Writer, r *AutopilotResult) error {
	fmt.Fprintf(w, "Origin %s (capacity %.0f requests a second); %s, browsing %s, a request every %s; seed %d, horizon %s.\n",
		r.Origin, r.Capacity, r.Arrivals, r.Browse, r.Every, r.Seed, bench.Human(r.Horizon))
	for _, c := range r.Cases {
		fmt.Fprintf(w, "\nLimits 3x too %s: %d active, %d a minute (the origin sustains about %d active, %d a minute); autopilot %s.\n\n",
			c.Case, c.Limits.TotalActiveUsers, c.Limits.NewUsersPerMinute, c.SustainedActive, c.SustainedPerMinute, c.Autopilot)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "\torigin p50\torigin p99\thealthy p99\tvs healthy\terrors\tthroughput\tqueue peak\tdrained at\twait p50\twait p90\tchanges")
		for _, s := range c.Sides {
			drained := fmt.Sprintf("not drained (%d of %d let in)", s.Admitted, s.Visitors)
			if s.Drained {
				drained = bench.Human(time.Duration(s.DrainedS * float64(time.Second)))
			}
			fmt.Fprintf(tw, "%s\t%.0f ms\t%.0f ms\t%.0f ms\t%.2fx\t%.2f %%\t%.0f/s\t%d\t%s\t%s\t%s\t%d\n", s.Name, s.OriginP50Ms, s.OriginP99Ms,
				s.HealthyP99Ms, s.P99Ratio, s.ErrorRate*100, s.ThroughputPerS, s.QueuePeak, drained,
				bench.Human(time.Duration(s.WaitP50S*float64(time.Second))), bench.Human(time.Duration(s.WaitP90S*float64(time.Second))), s.Changes)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
