package main

import (
	"io"
	"testing"
)

// TestE2EProxyBenchThroughput: with nginx installed, usher bench
// --scenario throughput loads the origin, the tuned and the unpooled
// reference proxies and usher (each in a process of its own), nginx as a
// plain reverse proxy and nginx asking usher (the recipe's nginx.conf) in
// the same rounds, every answer as expected, and reports the ratios and
// each server process's CPU per request.
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
	if res.UsherCPUPerAuthUs <= 0 {
		t.Errorf("usher's CPU per auth request %.1f us: want above 0", res.UsherCPUPerAuthUs)
	}
}
