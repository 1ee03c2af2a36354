package main

import (
	"os/exec"
	"testing"
)

// caddyGlobal goes before the recipe's site block: no admin endpoint (its
// default port would clash between tests), and the site on loopback only.
const caddyGlobal = "{\n\tadmin off\n\tdefault_bind 127.0.0.1\n}\n\n"

// caddyBinary returns caddy's path, or skips the test.
func caddyBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("caddy")
	if err != nil {
		t.Fatal("caddy is not installed (Debian package caddy; make deps installs it as root): the Caddy recipe cannot be tested")
	}
	return p
}

// startCaddy runs caddy with docs/integrations/Caddyfile in front of the
// rig's usher and origin.
func startCaddy(t *testing.T, rig *proxyRig) {
	t.Helper()
	bin := caddyBinary(t)
	conf := rig.writeFile(t, "Caddyfile", caddyGlobal+rig.recipe(t, "Caddyfile"))
	env := []string{"HOME=" + rig.dir, "XDG_DATA_HOME=" + rig.dir + "/data", "XDG_CONFIG_HOME=" + rig.dir + "/config"}
	rig.startProxy(t, "caddy.log", env, bin, "run", "--config", conf, "--adapter", "caddyfile")
}

// TestE2ECaddyForwardAuth runs docs/integrations/Caddyfile: Caddy asks
// usher about each request, admitted visitors reach the origin with their
// cookie set and the token passed on, waiting ones get usher's answer as
// it is (429).
func TestE2ECaddyForwardAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about 20 s")
	}
	t.Parallel()
	rig := newProxyRig(t)
	startCaddy(t, rig)
	checkForwardAuth(t, rig, 429)
}
