package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/bench/selfbench"
)

// nginxBinary returns nginx's path, or skips the test.
func nginxBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("nginx")
	if err != nil {
		t.Fatal("nginx is not installed (Debian package nginx; make deps installs it as root): the nginx recipe cannot be tested")
	}
	return p
}

// runNginxRecipe runs nginx with docs/integrations/nginx.conf in front
// of the rig's usher and origin, included in the smallest main config
// (selfbench.NginxMainConfig) as it would sit in conf.d/.
func runNginxRecipe(t *testing.T, rig *proxyRig) {
	t.Helper()
	bin := nginxBinary(t)
	site := rig.writeFile(t, "usher-site.conf", rig.recipe(t, "nginx.conf"))
	// nginx's workers run as another user when nginx starts as root: they
	// must be able to enter the directory.
	if err := os.Chmod(rig.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	main := rig.writeFile(t, "nginx-main.conf", selfbench.NginxMainConfig(rig.dir, 1, true, site))
	out, err := exec.Command(bin, "-t", "-p", rig.dir, "-c", main).CombinedOutput()
	if err != nil || strings.Contains(string(out), "[warn]") {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	showOnFailure(t, "nginx error", filepath.Join(rig.dir, "nginx-error.log"))
	showOnFailure(t, "nginx access", filepath.Join(rig.dir, "nginx-access.log"))
	rig.startProxy(t, "nginx.log", nil, bin, "-p", rig.dir, "-c", main, "-g", "daemon off; master_process on;")
}

// TestE2ENginxForwardAuth runs docs/integrations/nginx.conf: nginx's
// auth_request asks usher about each request, admitted visitors reach the
// origin with their cookie set and the token passed on, waiting ones get
// the page usher names in X-Usher-Page (status 200, the room's
// queueing_status_code).
func TestE2ENginxForwardAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about 20 s")
	}
	t.Parallel()
	rig := newProxyRig(t)
	runNginxRecipe(t, rig)
	checkForwardAuth(t, rig, 200)
}
