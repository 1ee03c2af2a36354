package main

import (
	"io"
	"testing"
)

// TestE2EProxyBenchThroughput: with nginx installed, usher bench
// --scenario throughput loads nginx alone and nginx asking usher (the
// recipe's nginx.conf) in the same rounds, every answer from the origin,
// and reports the ratio and usher's CPU per auth request.
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
	if res.Nginx == nil || res.NginxUsher == nil {
		t.Fatalf("no nginx targets: %+v", res)
	}
	t.Logf("nginx %.0f rps, nginx + usher %.0f rps (%.2fx); usher %.1f us CPU per auth request; nginx %.1f / %.1f us per request",
		res.Nginx.RPS, res.NginxUsher.RPS, res.NginxUsherVsNginx, res.UsherCPUPerAuthUs, res.NginxCPUPerRequestUs, res.NginxUsherCPUPerRequestUs)
	if res.Nginx.Errors != 0 || res.NginxUsher.Errors != 0 || res.Nginx.RPS <= 0 || res.NginxUsher.RPS <= 0 {
		t.Errorf("nginx %+v, nginx + usher %+v: want answers from the origin only", *res.Nginx, *res.NginxUsher)
	}
	if res.NginxUsherVsNginx <= 0 || res.NginxUsherVsNginx > 2 {
		t.Errorf("nginx + usher over nginx: %.2f", res.NginxUsherVsNginx)
	}
	if res.UsherCPUPerAuthUs <= 0 || res.NginxUsherCPUPerRequestUs <= 0 {
		t.Errorf("CPU per request: usher %.1f us, nginx with usher %.1f us: want both above 0", res.UsherCPUPerAuthUs, res.NginxUsherCPUPerRequestUs)
	}
}
