package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestE2EProxyBenchThroughput: with nginx installed, usher bench
// --scenario throughput loads the origin, the tuned and the unpooled
// reference proxies and usher (each in a process of its own), nginx as a
// plain reverse proxy and nginx asking usher (the recipe's nginx.conf) in
// the same rounds, every answer as expected, and reports the ratios and
// each server process's CPU per request. The ratios are only checked as
// measured here (short rounds); TestE2EProxyBenchGuards holds the
// documented ones to their floors.
func TestE2EProxyBenchThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: loads nginx for a few seconds")
	}
	nginxBinary(t)
	m := &Main{Stdout: io.Discard, Stderr: io.Discard}
	f, err := m.parseBenchFlags([]string{"--self", "--scenario", "throughput", "--rounds", "2", "--duration", "300ms", "--workers", "4"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.benchThroughput(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	if res.NginxProxy == nil || res.NginxUsher == nil {
		t.Fatalf("no nginx targets: %+v", res)
	}
	t.Logf("admitted %.2fx proxy-tuned, new %.2fx, nginx + usher %.2fx nginx; CPU us per request: usher admitted %.1f, proxy-tuned %.1f, proxy-unpooled %.1f, nginx %.1f; usher per auth %.1f",
		res.AdmittedVsProxyTuned, res.NewVisitorVsProxyTuned, res.NginxUsherVsNginxProxy,
		res.Admitted.CPUus, res.ProxyTuned.CPUus, res.ProxyUnpooled.CPUus, res.NginxProxy.CPUus, res.UsherCPUPerAuthUs)
	for name, fig := range map[string]Figure{"proxy-tuned": res.ProxyTuned, "proxy-unpooled": res.ProxyUnpooled,
		"admitted": res.Admitted, "new": res.NewVisitor, "checkin": res.CheckIn,
		"nginx-proxy": *res.NginxProxy, "nginx-usher": *res.NginxUsher} {
		if fig.Errors != 0 || fig.RPS <= 0 {
			t.Errorf("%s: %+v: want expected answers only", name, fig)
		}
		if fig.CPUus <= 0 {
			t.Errorf("%s: CPU per request %.1f us: want above 0 (its own process)", name, fig.CPUus)
		}
	}
	if res.Origin.CPUus != 0 {
		t.Errorf("origin: CPU per request %.1f us: the origin shares the bench's process, want none", res.Origin.CPUus)
	}
	for name, r := range map[string]float64{"admitted/proxy-tuned": res.AdmittedVsProxyTuned,
		"new/proxy-tuned": res.NewVisitorVsProxyTuned, "nginx+usher/nginx": res.NginxUsherVsNginxProxy,
		"admitted/nginx": res.AdmittedVsNginxProxy, "admitted/proxy-unpooled": res.AdmittedVsProxyUnpooled} {
		if r <= 0 || r > 10 {
			t.Errorf("%s: %.2f", name, r)
		}
	}
	// nginx keeps usher's answers for admitted visitors (the recipe's
	// cache): usher works far less per request through nginx than per
	// request it proxies itself (about as much without the cache).
	if res.UsherCPUPerAuthUs*4 >= res.Admitted.CPUus {
		t.Errorf("usher's CPU per request through nginx %.1f us, per admitted request %.1f us: want under a quarter (nginx's cache)", res.UsherCPUPerAuthUs, res.Admitted.CPUus)
	}
}

// TestE2EProxyBenchExternal: usher bench --scenario throughput --external
// loads the targets from outside, with wrk when it is installed and with
// the Go generator in a process of its own when it is not, pinned apart
// from the servers, every answer as expected, and reports each server's
// CPU per request, the origin's included (its own process).
func TestE2EProxyBenchExternal(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: loads the targets for a few seconds")
	}
	nginx := nginxBinary(t)
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		t.Fatal("wrk is not installed (Debian package wrk; make deps installs it as root)")
	}
	taskset, tasksetErr := exec.LookPath("taskset")
	run := func(t *testing.T, targets string) *ThroughputResult {
		m := &Main{Stdout: io.Discard, Stderr: io.Discard}
		f, err := m.parseBenchFlags([]string{"--self", "--scenario", "throughput", "--external", "--targets", targets,
			"--rounds", "1", "--duration", "1s", "--workers", "8"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := m.benchThroughput(t.Context(), f)
		if err != nil {
			t.Fatal(err)
		}
		if tasksetErr == nil && runtime.NumCPU() >= 2 && (res.GeneratorCPUs != "0" || res.ServerCPUs != strconv.Itoa(runtime.NumCPU()-1)) {
			t.Errorf("pinned to %q and %q, want the generator on 0 and the servers on the last CPU", res.GeneratorCPUs, res.ServerCPUs)
		}
		figs := map[string]*Figure{"origin": &res.Origin, "proxy-tuned": &res.ProxyTuned, "admitted": &res.Admitted,
			"nginx-proxy": res.NginxProxy, "nginx-usher": res.NginxUsher}
		for name := range strings.SplitSeq(targets, ",") {
			fig := figs[name]
			if fig == nil || fig.Errors != 0 || fig.RPS <= 0 || fig.CPUus <= 0 {
				t.Errorf("%s: %+v: want expected answers only, and the CPU of its own process", name, fig)
			}
		}
		return res
	}
	t.Run("wrk", func(t *testing.T) {
		res := run(t, "origin,proxy-tuned,admitted,nginx-proxy,nginx-usher")
		if res.Generator != "wrk" {
			t.Errorf("generator %q with wrk installed", res.Generator)
		}
		if res.AdmittedVsProxyTuned <= 0 || res.NginxUsherVsNginxProxy <= 0 {
			t.Errorf("ratios: %+v", res)
		}
	})
	t.Run("go-process", func(t *testing.T) {
		// A PATH with nginx and taskset but not wrk.
		bin := t.TempDir()
		for _, p := range []string{nginx, taskset} {
			if p != "" {
				if err := os.Symlink(p, filepath.Join(bin, filepath.Base(p))); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Setenv("PATH", bin)
		if _, err := exec.LookPath("wrk"); err == nil {
			t.Fatalf("wrk (%s) still on PATH", wrk)
		}
		res := run(t, "origin,admitted")
		if res.Generator != "go-process" {
			t.Errorf("generator %q without wrk", res.Generator)
		}
	})
}
