package selfbench

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// WriteSummary writes a flash-crowd, throughput or standing-room result
// in a few sentences for people, before its figures.
func WriteSummary(w io.Writer, out any) {
	switch r := out.(type) {
	case *FlashResult:
		fmt.Fprintf(w, "Flash crowd %s into a room of %s active, %s a minute, %s sessions, %s refresh.\n",
			r.Arrivals, bench.Count(r.Limits.TotalActiveUsers), bench.Count(r.Limits.NewUsersPerMinute),
			bench.Human(r.Limits.SessionDuration), bench.Human(r.Limits.RefreshInterval))
		bench.WriteSummary(w, r.Result, r.Limits)
	case *ThroughputResult:
		writeThroughputSummary(w, r)
	case *StandingResult:
		writeStandingSummary(w, r)
	}
}

// Warnings are the warnings of a bench result: why it may measure
// nothing.
func Warnings(out any) []string {
	switch r := out.(type) {
	case *FlashResult:
		return r.Warnings
	case *ThroughputResult:
		var ws []string
		for _, t := range []struct {
			name, target string
			f            Figure
		}{{"origin direct", "origin", r.Origin}, {"proxy-tuned", "proxy-tuned", r.ProxyTuned},
			{"proxy-unpooled", "proxy-unpooled", r.ProxyUnpooled}, {"admitted", "admitted", r.Admitted},
			{"new visitor", "new", r.NewVisitor}, {"check-in", "checkin", r.CheckIn}} {
			if len(r.Targets) > 0 && !slices.Contains(r.Targets, t.target) {
				continue // not loaded (--targets)
			}
			switch {
			case t.f.RPS == 0:
				ws = append(ws, fmt.Sprintf("%s: no request succeeded, so its figures and ratios measure nothing", t.name))
			case t.f.Errors > 0:
				ws = append(ws, fmt.Sprintf("%s: %s requests failed", t.name, bench.Count(t.f.Errors)))
			}
		}
		return ws
	case *StandingResult:
		var ws []string
		if r.MaxWaiters == 0 {
			ws = append(ws, fmt.Sprintf("no number of waiters stayed within the bound (p99 %s): the run measured no capacity; raise --bound or look at the steps", ms(r.BoundMs)))
		}
		if r.Stopped != "" {
			ws = append(ws, "stopped before the last step: "+r.Stopped)
		}
		return ws
	}
	return nil
}

func writeThroughputSummary(w io.Writer, r *ThroughputResult) {
	fmt.Fprintf(w, "Throughput, %d rounds of %s with %d requests in flight, usher on the %s store.\n",
		r.Rounds, bench.Human(time.Duration(r.DurationS*float64(time.Second))), r.Workers, r.Store)
	if r.Generator != "" && r.Generator != "in-process" {
		pinned := "not pinned (no taskset, or one CPU)"
		if r.ServerCPUs != "" {
			pinned = fmt.Sprintf("pinned to CPU %s, every server to CPU %s", r.GeneratorCPUs, r.ServerCPUs)
		}
		fmt.Fprintf(w, "Measured from outside: the load generator (%s) in a process of its own, %s.\n", r.Generator, pinned)
	}
	// With --targets, only what was loaded is spoken of.
	loaded := func(name string) bool { return len(r.Targets) == 0 || slices.Contains(r.Targets, name) }
	type part struct {
		name, what string
		ratio      float64
		res        *Figure
	}
	var ratios, latencies, cpus []string
	for _, p := range []part{
		{"admitted", "admitted visitor", r.AdmittedVsProxyTuned, &r.Admitted},
		{"new", "new visitor", r.NewVisitorVsProxyTuned, &r.NewVisitor},
		{"checkin", "check-in", r.CheckInVsProxyTuned, &r.CheckIn},
	} {
		if !loaded(p.name) {
			continue
		}
		if loaded("proxy-tuned") {
			ratios = append(ratios, fmt.Sprintf("%s %.2fx", p.what, p.ratio))
		}
		latencies = append(latencies, p.what+" "+ms(p.res.P50ms))
		if p.res.CPUus > 0 {
			cpus = append(cpus, "usher "+us(p.res.CPUus)+" "+p.what)
		}
	}
	for _, p := range []part{
		{name: "proxy-tuned", what: "tuned proxy", res: &r.ProxyTuned},
		{name: "proxy-unpooled", what: "unpooled proxy", res: &r.ProxyUnpooled},
		{name: "origin", what: "origin direct", res: &r.Origin},
	} {
		if !loaded(p.name) {
			continue
		}
		latencies = append(latencies, p.what+" "+ms(p.res.P50ms))
		if p.res.CPUus > 0 {
			cpus = append(cpus, p.what+" "+us(p.res.CPUus))
		}
	}
	if r.NginxProxy != nil && r.NginxProxy.CPUus > 0 {
		cpus = append(cpus, "nginx "+us(r.NginxProxy.CPUus))
	}
	if len(ratios) > 0 {
		fmt.Fprintf(w, "Rate through usher against a tuned reverse proxy (httputil.ReverseProxy with usher's transport and buffer pool, %s req/s): %s.\n",
			rps(r.ProxyTuned.RPS), strings.Join(ratios, ", "))
	}
	if len(latencies) > 0 {
		fmt.Fprintf(w, "Median latency: %s.\n", strings.Join(latencies, ", "))
	}
	if len(cpus) > 0 {
		fmt.Fprintf(w, "CPU per request: %s.\n", strings.Join(cpus, ", "))
	}
	if r.NginxProxy != nil && loaded("nginx-proxy") {
		fmt.Fprintf(w, "Against nginx as a plain reverse proxy: usher admitted %.2fx; nginx asking usher (forward auth) %.2fx.\n",
			r.AdmittedVsNginxProxy, r.NginxUsherVsNginxProxy)
	}
	if r.EmbeddedAdmitted != nil {
		fmt.Fprintf(w, "On Redis against the embedded store: admitted %.2fx, new visitor %.2fx, check-in %.2fx.\n",
			r.AdmittedRedisVsEmbedded, r.NewVisitorRedisVsEmbedded, r.CheckInRedisVsEmbedded)
	}
}

func writeStandingSummary(w io.Writer, r *StandingResult) {
	refresh := bench.Human(time.Duration(r.RefreshS * float64(time.Second)))
	most := bench.Human(time.Duration(r.MaxRefreshS * float64(time.Second)))
	if r.MaxWaiters == 0 {
		fmt.Fprintf(w, "Standing room, check-ins every %s near the front up to %s: no step stayed within the %s p99 bound.\n", refresh, most, ms(r.BoundMs))
	} else {
		var at StandingStep
		for _, s := range r.Steps {
			if s.Waiters == r.MaxWaiters {
				at = s
			}
		}
		fmt.Fprintf(w, "usher held %s waiters checking in every %s near the front up to %s further back (%s check-ins a second, %.2fx the %s of a fixed %s) with a check-in delay p99 of %s, within the %s bound, in %.0f MB.\n",
			bench.Count(r.MaxWaiters), refresh, most, rps(at.CheckInsPerS), at.CheckInsPerS/at.FixedRPS, rps(at.FixedRPS), refresh, ms(at.DelayP99ms), ms(r.BoundMs), r.RSSAtMaxMB)
	}
	for _, s := range r.Steps {
		if s.Held > 0 {
			fmt.Fprintf(w, "At %s waiters, usher held %s near-front check-ins for a place on the next second (p99 %s with the hold, %s without it; %s of the others).\n",
				bench.Count(s.Waiters), bench.Count(s.Held), ms(s.P99ms), ms(s.DelayP99ms), ms(s.NotHeldP99ms))
		}
		if s.Waiters > r.MaxWaiters {
			fmt.Fprintf(w, "At %s waiters: delay p99 %s, %s errors, %s check-ins a second, sent up to %s late (p99).\n",
				bench.Count(s.Waiters), ms(s.DelayP99ms), bench.Count(s.Errors), rps(s.CheckInsPerS), ms(s.LateP99ms))
		}
	}
	writeStandingRedis(w, r)
	if n := len(r.Steps); n > 0 && r.Steps[n-1].Waiters == r.MaxWaiters {
		fmt.Fprintf(w, "That is the most it tried (--max-waiters).\n")
	}
	fmt.Fprintf(w, "The load generator held its waiters in %.0f MB.\n", r.GeneratorRSSMB)
}

// writeStandingRedis writes what a standing room on Redis cost the
// Redis masters and the nodes, step by step.
func writeStandingRedis(w io.Writer, r *StandingResult) {
	if r.Store != "redis" && r.Store != "redis-cluster" {
		return
	}
	store := "one Redis server"
	if r.Store == "redis-cluster" {
		store = "a Redis Cluster"
		if n := len(r.Steps); n > 0 {
			store = fmt.Sprintf("a Redis Cluster of %d masters", len(r.Steps[n-1].RedisShards))
		}
	}
	room := ""
	if r.Shards > 1 {
		room = fmt.Sprintf(", the room on a front and %d back shards (shards: %d)", r.Shards-1, r.Shards)
	}
	fmt.Fprintf(w, "On %s, %d usher nodes sharing it%s:\n", store, r.Nodes, room)
	for _, s := range r.Steps {
		var shards, rss []string
		for _, sh := range s.RedisShards {
			shards = append(shards, fmt.Sprintf("%s %s calls/s (%s commands/s), %.0f%% of a core, %.0f MB",
				sh.Addr, rps(sh.CallsPerS), rps(sh.CommandsPerS), 100*sh.CPUPerS, sh.UsedMemoryMB))
		}
		for _, m := range s.RSSPerNodeMB {
			rss = append(rss, fmt.Sprintf("%.0f", m))
		}
		fmt.Fprintf(w, "  %s waiters: %.3f Redis calls a check-in (%.1f commands, scripts' included; %s check-ins a second, p99 %s); usher %s a check-in over the nodes, %s MB each; masters: %s.%s\n",
			bench.Count(s.Waiters), s.RedisCallsPerCheckIn, s.RedisCommandsPerCheckIn, rps(s.CheckInsPerS), ms(s.P99ms), us(s.UsherCPUus), strings.Join(rss, "/"), strings.Join(shards, "; "),
			spreadText(s.RedisSpread))
	}
}

// spreadText says how evenly the masters shared a step's load, after a
// space: "" with one master.
func spreadText(s *ShardSpread) string {
	if s == nil || s.Masters < 2 {
		return ""
	}
	return fmt.Sprintf(" Spread: the busiest master took %.0f%% of the calls and %.0f%% of the CPU (%.0f%% each is even).",
		100*s.BusiestCallsShare, 100*s.BusiestCPUShare, 100*s.EvenShare)
}

// us writes microseconds: "42.1us".
func us(x float64) string { return fmt.Sprintf("%.1fus", x) }

// rps writes requests a second, rounded to the unit.
func rps(x float64) string { return bench.Count(int(x + 0.5)) }

// ms writes milliseconds: "0.42ms", "5.3ms", "120ms".
func ms(x float64) string {
	switch {
	case x < 1:
		return fmt.Sprintf("%.2fms", x)
	case x < 100:
		return fmt.Sprintf("%.1fms", x)
	}
	return fmt.Sprintf("%.0fms", x)
}
