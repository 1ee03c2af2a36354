package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// nginxMain wraps the recipe (an http-level file, as it would sit in
// conf.d/) in the smallest main config that runs nginx as this user in
// the rig's directory.
const nginxMain = `worker_processes 1;
error_log %[1]s/nginx-error.log info;
pid %[1]s/nginx.pid;
events { worker_connections 1024; }
http {
    access_log %[1]s/nginx-access.log;
    client_body_temp_path %[1]s/client_body;
    proxy_temp_path %[1]s/proxy;
    fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi;
    scgi_temp_path %[1]s/scgi;
    include %[2]s;
}
`

// nginxBinary returns nginx's path, or skips the test.
func nginxBinary(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("nginx is not installed (Debian package nginx; make deps installs it): the nginx recipe was not run")
	}
	return p
}

// startNginx runs nginx with docs/integrations/nginx.conf in front of
// the rig's usher and origin.
func startNginx(t *testing.T, rig *proxyRig) {
	t.Helper()
	bin := nginxBinary(t)
	site := rig.writeFile(t, "usher-site.conf", rig.recipe(t, "nginx.conf"))
	// nginx's workers run as another user when nginx starts as root: they
	// must be able to enter the directory.
	if err := os.Chmod(rig.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	main := rig.writeFile(t, "nginx-main.conf", fmt.Sprintf(nginxMain, rig.dir, site))
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
	startNginx(t, rig)
	checkForwardAuth(t, rig, 200)
}
