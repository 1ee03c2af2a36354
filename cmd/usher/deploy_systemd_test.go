package main

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// systemdUnit is a unit file's settings: section, then key, then every
// value the key was given, in order.
type systemdUnit map[string]map[string][]string

// parseSystemdUnit reads a unit file as systemd does: [Section] headers,
// Key=Value lines, # and ; comments, a trailing backslash continuing a
// line. A line that is none of these fails the test.
func parseSystemdUnit(t *testing.T, name, data string) systemdUnit {
	t.Helper()
	u := systemdUnit{}
	section := ""
	sc := bufio.NewScanner(strings.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		for strings.HasSuffix(line, `\`) && sc.Scan() {
			n++
			line = strings.TrimSuffix(line, `\`) + " " + strings.TrimSpace(sc.Text())
		}
		switch {
		case line == "" || line[0] == '#' || line[0] == ';':
		case line[0] == '[' && line[len(line)-1] == ']':
			section = line[1 : len(line)-1]
			if u[section] == nil {
				u[section] = map[string][]string{}
			}
		default:
			key, value, ok := strings.Cut(line, "=")
			if !ok || section == "" || strings.TrimSpace(key) == "" {
				t.Fatalf("%s:%d: not a Key=Value line in a section: %q", name, n, line)
			}
			key = strings.TrimSpace(key)
			u[section][key] = append(u[section][key], strings.TrimSpace(value))
		}
	}
	return u
}

// one returns the key's last value in section, and whether it is set.
func (u systemdUnit) one(section, key string) (string, bool) {
	v := u[section][key]
	if len(v) == 0 {
		return "", false
	}
	return v[len(v)-1], true
}

// TestDeploySystemdUnit checks the unit's hardening and that it agrees with
// its sample config: the config file it runs, the state directory the store
// writes to, and the credential the admin token comes from.
func TestDeploySystemdUnit(t *testing.T) {
	t.Parallel()
	const unitName = "usher.service"
	u := parseSystemdUnit(t, unitName, string(readRepoFile(t, "deploy/systemd/"+unitName)))
	for _, section := range []string{"Unit", "Service", "Install"} {
		if u[section] == nil {
			t.Errorf("the unit has no [%s] section", section)
		}
	}
	want := map[string]string{
		"DynamicUser":             "yes",
		"StateDirectory":          "usher",
		"ConfigurationDirectory":  "usher",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"NoNewPrivileges":         "yes",
		"CapabilityBoundingSet":   "",
		"AmbientCapabilities":     "",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"ExecReload":              "/bin/kill -HUP $MAINPID",
		"Restart":                 "on-failure",
		"KillSignal":              "SIGTERM",
		"TimeoutStopSec":          "20",
	}
	for key, value := range want {
		got, ok := u.one("Service", key)
		if !ok || got != value {
			t.Errorf("[Service] %s=%q (set: %v), want %q", key, got, ok, value)
		}
	}
	if filters := u["Service"]["SystemCallFilter"]; len(filters) == 0 || filters[0] != "@system-service" {
		t.Errorf("[Service] SystemCallFilter %q: want @system-service first", filters)
	}
	if wanted, _ := u.one("Install", "WantedBy"); wanted != "multi-user.target" {
		t.Errorf("[Install] WantedBy=%q, want multi-user.target", wanted)
	}

	start, _ := u.one("Service", "ExecStart")
	args := strings.Fields(start)
	if len(args) < 2 || !filepath.IsAbs(args[0]) || filepath.Base(args[0]) != "usher" || args[1] != "serve" {
		t.Fatalf("ExecStart=%q, want /path/to/usher serve --config ...", start)
	}
	configPath := flagValue(args, "--config", "")
	confDir, _ := u.one("Service", "ConfigurationDirectory")
	if path.Dir(configPath) != "/etc/"+confDir {
		t.Errorf("ExecStart reads %q, not a file of ConfigurationDirectory=%s (/etc/%s)", configPath, confDir, confDir)
	}

	cfg := parseUsherConfig(t, "deploy/systemd/usher.yaml", string(readRepoFile(t, "deploy/systemd/usher.yaml")))
	stateDir, _ := u.one("Service", "StateDirectory")
	if cfg.Store.Redis != nil || cfg.Store.Embedded.Path != "/var/lib/"+stateDir {
		t.Errorf("store.embedded.path %q, want the unit's StateDirectory /var/lib/%s (the only place it may write)", cfg.Store.Embedded.Path, stateDir)
	}
	if wd, _ := u.one("Service", "WorkingDirectory"); wd != "/var/lib/"+stateDir {
		t.Errorf("WorkingDirectory=%q, want /var/lib/%s (relative paths land there)", wd, stateDir)
	}
	// The token is a credential: LoadCredential=NAME:PATH is read as
	// $CREDENTIALS_DIRECTORY/NAME (/run/credentials/<unit>/NAME).
	var creds []string
	for _, c := range u["Service"]["LoadCredential"] {
		name, _, _ := strings.Cut(c, ":")
		creds = append(creds, "$CREDENTIALS_DIRECTORY/"+name)
	}
	if cfg.Admin.Listen == "" || !slices.Contains(creds, cfg.Admin.TokenFile) {
		t.Errorf("admin.token_file %q is not one of the unit's credentials %q", cfg.Admin.TokenFile, creds)
	}
	if host, _, _ := net.SplitHostPort(cfg.Admin.Listen); host != "127.0.0.1" {
		t.Errorf("admin.listen %q: the sample keeps the admin listener on loopback", cfg.Admin.Listen)
	}
}

// TestDeploySystemdAnalyzeVerify runs systemd-analyze verify on the unit,
// with ExecStart pointing at an executable that exists (this test's
// binary): verify checks that it does. Any message fails the test, since
// verify exits 0 on unknown keys and bad values, which it only reports.
func TestDeploySystemdAnalyzeVerify(t *testing.T) {
	t.Parallel()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd; make deps installs it): the unit was not verified, only parsed by TestDeploySystemdUnit")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	unit := string(readRepoFile(t, "deploy/systemd/usher.service"))
	const execStart = "ExecStart=/usr/local/bin/usher "
	if !strings.Contains(unit, "\n"+execStart) {
		t.Fatalf("the unit has no line starting %q", execStart)
	}
	unit = strings.Replace(unit, "\n"+execStart, "\nExecStart="+self+" ", 1)
	file := filepath.Join(t.TempDir(), "usher.service")
	if err := os.WriteFile(file, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), analyze, "verify", file).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
