package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// adminServeConfig is a node with an admin listener, a write token
// (admin), a read token (viewer), and a room with an event and a rule.
const adminServeConfig = `listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: write-secret
  tokens:
    - {name: viewer, token: read-secret, role: read}
store:
  embedded:
    path: %s
rooms:
  - id: sale
    name: Big Sale
    origin: %s
    total_active_users: 200
    new_users_per_minute: 300
    json_response_enabled: true
    events:
      - name: drop
        event_start_time: 2030-12-01T10:00:00Z
        event_end_time: 2030-12-01T12:00:00Z
        total_active_users: 400
    rules:
      - description: office
        expression: ip.in_cidr("10.0.0.0/8")
`

// cli runs a verb against the admin listener adm with token, and returns
// the exit code and output.
func cli(t *testing.T, adm, token string, args ...string) (int, string, string) {
	t.Helper()
	args = append(args, "--admin", adm, "--token", token)
	return runMain(t, args...)
}

// mustCLI runs a verb that must succeed.
func mustCLI(t *testing.T, adm string, args ...string) string {
	t.Helper()
	code, out, errs := cli(t, adm, "write-secret", args...)
	if code != 0 {
		t.Fatalf("usher %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// visitorWaits reports whether a new visitor to the public listener gets
// the waiting JSON (not the origin).
func visitorWaits(t *testing.T, pub string) bool {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+pub+"/", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	return strings.Contains(b.String(), `"inWaitingRoom":true`)
}

// TestAdminCLI runs the real serve in-process and drives it with every
// admin verb: the changes take effect at once, are kept across a
// restart, are in the audit log, and bad input fails with the API's
// message and exit code 1 (2 for a bad command line).
func TestAdminCLI(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(adminServeConfig, filepath.Join(dir, "data"), httpServer(t)))
	pub, adm, stop := startMain(t, "serve", "--config", path)
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()

	out := mustCLI(t, adm, "rooms")
	if !strings.Contains(out, "sale") || !strings.Contains(out, "0/200") || !strings.Contains(out, "QUEUE-ALL") {
		t.Errorf("usher rooms:\n%s", out)
	}
	if visitorWaits(t, pub) {
		t.Fatal("a first visitor waits before queue-all")
	}
	out = mustCLI(t, adm, "room", "queue-all", "sale", "on")
	if !strings.Contains(out, "sale: queue_all false → true (set at runtime)") {
		t.Errorf("queue-all on:\n%s", out)
	}
	if !visitorWaits(t, pub) {
		t.Fatal("a new visitor is let in after queue-all on (the embedded store applies at once)")
	}
	out = mustCLI(t, adm, "room", "set", "sale", "total_active_users=500", "new_users_per_minute=900", "session_duration=90s", "cookie_attributes.samesite=strict")
	for _, want := range []string{"total_active_users 200 → 500", "new_users_per_minute 300 → 900", "session_duration 5m → 1m30s", "cookie_attributes.samesite lax → strict"} {
		if !strings.Contains(out, want) {
			t.Errorf("room set lacks %q:\n%s", want, out)
		}
	}
	out = mustCLI(t, adm, "room", "get", "sale")
	if !strings.Contains(out, "total_active_users") || !strings.Contains(out, "* since") || !strings.Contains(out, "by admin (file: 200)") {
		t.Errorf("room get:\n%s", out)
	}
	// Events and rules.
	out = mustCLI(t, adm, "events", "add", "sale", "name=late drop", "event_start_time=2030-12-02T10:00:00Z", "event_end_time=2030-12-02T11:00:00Z", "queue_all=true")
	if !strings.Contains(out, "event added") || !strings.Contains(out, "late drop: 2030-12-02T10:00:00Z to 2030-12-02T11:00:00Z") {
		t.Errorf("events add:\n%s", out)
	}
	mustCLI(t, adm, "events", "set", "sale", "late drop", "total_active_users=50")
	out = mustCLI(t, adm, "events", "list", "sale")
	if !strings.Contains(out, "late drop") || !strings.Contains(out, "total_active_users=50") {
		t.Errorf("events list:\n%s", out)
	}
	mustCLI(t, adm, "events", "delete", "sale", "drop")
	mustCLI(t, adm, "rules", "add", "sale", `expression=path == "/health"`, "description=health")
	mustCLI(t, adm, "rules", "disable", "sale", "0")
	out = mustCLI(t, adm, "rules", "list", "sale")
	if !strings.Contains(out, "0  office  disabled") || !strings.Contains(out, `1  health  enabled  path == "/health"`) {
		t.Errorf("rules list:\n%s", out)
	}
	// Bad input: the API's message, exit 1, nothing changed.
	code, _, errs := cli(t, adm, "write-secret", "room", "set", "sale", "total_active_users=0")
	if code != 1 || !strings.Contains(errs, "rooms[0] (sale): total_active_users: must be at least 1, got 0") {
		t.Errorf("set total_active_users=0: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, adm, "write-secret", "room", "set", "sale", "total_active_users=-5", "session_duration=soon")
	if code != 1 || !strings.Contains(errs, "total_active_users: must be at least 1, got -5") || !strings.Contains(errs, `session_duration: must be a duration like "90s" or "5m", got "soon"`) {
		t.Errorf("set two bad values: exit %d, want both reported: %s", code, errs)
	}
	code, _, errs = cli(t, adm, "write-secret", "room", "set", "sale", "total_active_users=lots")
	if code != 1 || !strings.Contains(errs, `total_active_users: must be an integer, got "lots"`) {
		t.Errorf("set total_active_users=lots: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, adm, "write-secret", "events", "add", "sale", "name=x", "event_start_time=2030-12-02T10:30:00Z", "event_end_time=2030-12-02T12:00:00Z")
	if code != 1 || !strings.Contains(errs, "overlaps the window of") {
		t.Errorf("an overlapping event: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, adm, "read-secret", "room", "suspend", "sale", "on")
	if code != 1 || !strings.Contains(errs, `token "viewer" may only read`) {
		t.Errorf("a read token writing: exit %d, %s", code, errs)
	}
	code, _, errs = cli(t, adm, "nope", "rooms")
	if code != 1 || !strings.Contains(errs, "invalid bearer token") {
		t.Errorf("a bad token: exit %d, %s", code, errs)
	}
	for _, bad := range [][]string{
		{"room", "queue-all", "sale", "maybe"},
		{"room", "set", "sale", "total_active_users"},
		{"room", "frobnicate", "sale"},
		{"rules", "enable", "sale", "first"},
		{"room", "get"},
	} {
		if code, _, _ := cli(t, adm, "write-secret", bad...); code != 2 {
			t.Errorf("usher %s: exit %d, want 2", strings.Join(bad, " "), code)
		}
	}
	if code, _, errs := runMain(t, "rooms", "--admin", adm); code != 2 || !strings.Contains(errs, "--token") {
		t.Errorf("no token: exit %d, %s", code, errs)
	}
	// The audit log has every change, newest first, with the token.
	out = mustCLI(t, adm, "audit", "--room", "sale", "--limit", "50")
	for _, want := range []string{"rule.update", "rule.create", "event.delete", "event.update", "event.create", "room.update", "queue_all false → true", "admin"} {
		if !strings.Contains(out, want) {
			t.Errorf("audit lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "\n") != 8 {
		t.Errorf("audit: want a header and 7 entries:\n%s", out)
	}
	// usher top once, without a terminal: one block.
	out = mustCLI(t, adm, "top", "--once")
	if !strings.Contains(out, "usher top") || !strings.Contains(out, "sale") || !strings.Contains(out, "on ") || strings.Contains(out, "Ctrl-C") {
		t.Errorf("top --once:\n%s", out)
	}
	// usher check shows the overrides the running usher has, and says a
	// reload of the file would keep them.
	code, out, errs = runMain(t, "check", "--config", path, "--admin", adm, "--token", "read-secret")
	if code != 0 || !strings.Contains(out, "Runtime overrides (from the usher at") || !strings.Contains(out, "queue_all = true (file: false)") ||
		!strings.Contains(out, "events = 1 item (file: 1 item)") {
		t.Errorf("check --admin: exit %d\n%s%s", code, out, errs)
	}

	// The overrides are in the store: a restart keeps them.
	if code := stop(); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
	stopped = true
	pub, adm, stop = startMain(t, "serve", "--config", path)
	stopped = false
	if !visitorWaits(t, pub) {
		t.Error("queue_all was lost in the restart")
	}
	out = mustCLI(t, adm, "room", "get", "sale")
	if !strings.Contains(out, "500") || !strings.Contains(out, "late drop") {
		t.Errorf("after the restart:\n%s", out)
	}
	// Reset: the file's values again, audited.
	out = mustCLI(t, adm, "room", "reset", "sale")
	if !strings.Contains(out, "dropped 7 runtime override(s)") {
		t.Errorf("room reset:\n%s", out)
	}
	if visitorWaits(t, pub) {
		t.Error("a new visitor waits after the reset (queue_all is off in the file)")
	}
	if out := mustCLI(t, adm, "audit", "--limit", "1"); !strings.Contains(out, "room.reset") {
		t.Errorf("audit after reset:\n%s", out)
	}
	var v struct {
		Overrides map[string]any `json:"overrides"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, adm, "room", "get", "sale", "--json")), &v); err != nil || len(v.Overrides) != 0 {
		t.Errorf("room get --json after reset: %v %v", v, err)
	}
}

// TestAdminReloadKeepsOverrides: a SIGHUP reload applies the file with
// the overrides over it, and the log says what changed.
func TestAdminReloadKeepsOverrides(t *testing.T) {
	dir := t.TempDir()
	origin := httpServer(t)
	body := fmt.Sprintf(adminServeConfig, filepath.Join(dir, "data"), origin)
	path := writeConfig(t, body)
	var logs lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	m := &Main{Stdout: &logs, Stderr: &logs, Ready: func(p, a string) { ready <- [2]string{p, a} }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--config", path}) }()
	defer func() { cancel(); <-done }()
	var adm string
	select {
	case a := <-ready:
		adm = a[1]
	case <-time.After(20 * time.Second):
		t.Fatal("not listening")
	}
	mustCLI(t, adm, "room", "set", "sale", "total_active_users=777")
	if err := os.WriteFile(path, []byte(strings.Replace(body, "new_users_per_minute: 300", "new_users_per_minute: 301", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "config reloaded") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	out := mustCLI(t, adm, "room", "get", "sale")
	if !strings.Contains(out, "777") || !strings.Contains(out, "301") {
		t.Errorf("after the reload: want the override 777 and the file's new 301:\n%s", out)
	}
	if !strings.Contains(logs.String(), `msg="config file reloaded" version=1 room=sale changes="new_users_per_minute 300 → 301"`) ||
		!strings.Contains(logs.String(), `msg="runtime change by token \"admin\" (room.update rooms/sale)" version=1 room=sale changes="total_active_users 200 → 777"`) {
		t.Errorf("the log does not say what changed:\n%s", logs.String())
	}
}
