package main

import (
	"os/exec"
	"strings"
	"testing"
)

// haproxyBinary returns haproxy's path, or skips the test.
func haproxyBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not installed (Debian package haproxy; make deps installs it as root): the HAProxy recipe cannot be tested")
	}
	return p
}

// startHAProxy runs haproxy with docs/integrations/haproxy.cfg (and the
// usher-auth.lua it loads) in front of the rig's usher and origin.
func startHAProxy(t *testing.T, rig *proxyRig) {
	t.Helper()
	bin := haproxyBinary(t)
	rig.writeFile(t, "usher-auth.lua", rig.recipe(t, "usher-auth.lua"))
	conf := rig.writeFile(t, "haproxy.cfg", rig.recipe(t, "haproxy.cfg"))
	out, err := exec.Command(bin, "-c", "-f", conf).CombinedOutput()
	if err != nil || strings.Contains(string(out), "WARNING") {
		t.Fatalf("haproxy -c: %v\n%s", err, out)
	}
	rig.startProxy(t, "haproxy.log", nil, bin, "-db", "-f", conf)
}

// TestE2EHAProxyForwardAuth runs docs/integrations/haproxy.cfg: HAProxy's
// Lua action asks usher about each request, admitted visitors reach the
// origin with their cookie set and the token passed on, waiting ones get
// usher's answer as it is (429).
func TestE2EHAProxyForwardAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about 20 s")
	}
	t.Parallel()
	rig := newProxyRig(t)
	startHAProxy(t, rig)
	checkForwardAuth(t, rig, 429)
}
