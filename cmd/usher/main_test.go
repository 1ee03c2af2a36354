package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench/selfbench"
)

// TestMain runs usher bench's target processes when the test binary is
// started as one (usher bench re-executes its own binary, here the test
// binary), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(selfbench.ChildEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := NewMain().Run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// runMain runs the program in-process and returns its exit code and output.
func runMain(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	m := &Main{Stdout: &out, Stderr: &errb}
	code := m.Run(context.Background(), args)
	return code, out.String(), errb.String()
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "usher.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const contractConfig = `listen: 127.0.0.1:8080
admin:
  listen: 127.0.0.1:9090
  token: change-me
store:
  embedded:
    path: ./usher-data
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: http://127.0.0.1:3000
    routes:
      - path: /
    total_active_users: 200
    new_users_per_minute: 300
    session_duration: 5m
    queueing_method: fifo
    refresh_interval: 20s
    json_response_enabled: true
`

func TestCheckContractConfig(t *testing.T) {
	code, out, errs := runMain(t, "check", "--config", writeConfig(t, contractConfig))
	if code != 0 {
		t.Fatalf("check exit %d: %s", code, errs)
	}
	for _, want := range []string{"is valid", `Room "sale"`, "200 active visitors", "300 new visitors a minute"} {
		if !strings.Contains(out, want) {
			t.Errorf("check output lacks %q:\n%s", want, out)
		}
	}
}

func TestBadConfigFailsCheckAndServe(t *testing.T) {
	cases := []struct {
		name, from, to string
		want           []string
	}{
		{"wrong type", "total_active_users: 200", "total_active_users: lots",
			[]string{"rooms[0] (sale)", "total_active_users", "integer"}},
		{"negative limit", "new_users_per_minute: 300", "new_users_per_minute: -5",
			[]string{"rooms[0] (sale)", "new_users_per_minute", "at least 1"}},
		{"unknown key", "queueing_method: fifo", "queueing_method: fifo\n    totl_active_users: 3",
			[]string{"rooms[0] (sale)", `unknown field "totl_active_users"`}},
		{"duration without unit", "session_duration: 5m", "session_duration: 300",
			[]string{"rooms[0] (sale)", "session_duration", "unit"}},
		{"overlapping routes without cookie suffixes", "json_response_enabled: true",
			"json_response_enabled: true\n  - id: checkout\n    origin: http://127.0.0.1:3001\n    routes:\n      - path: /checkout\n    total_active_users: 10\n    new_users_per_minute: 10",
			[]string{"rooms[1] (checkout)", "sale", "cookie_suffix"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := strings.Replace(contractConfig, tc.from, tc.to, 1)
			if body == contractConfig {
				t.Fatal("the case changed nothing")
			}
			path := writeConfig(t, body)
			for _, cmd := range []string{"check", "serve"} {
				code, _, errs := runMain(t, cmd, "--config", path)
				if code != 1 {
					t.Fatalf("%s exit %d, want 1; stderr:\n%s", cmd, code, errs)
				}
				for _, want := range tc.want {
					if !strings.Contains(errs, want) {
						t.Errorf("%s: error lacks %q:\n%s", cmd, want, errs)
					}
				}
			}
		})
	}
}

func TestKeysNewAndVersion(t *testing.T) {
	code, out, _ := runMain(t, "keys", "new", "--id", "k2026")
	if code != 0 || !strings.Contains(out, "id: k2026") || !strings.Contains(out, "secret: ") {
		t.Fatalf("keys new: %d\n%s", code, out)
	}
	// The printed key is accepted by the config.
	key := out[strings.Index(out, "keys:"):]
	cfg := strings.Replace(contractConfig, "rooms:", strings.TrimSpace(key)+"\nrooms:", 1)
	if code, _, errs := runMain(t, "check", "--config", writeConfig(t, cfg)); code != 0 {
		t.Fatalf("a config with the new key fails check: %s", errs)
	}
	if code, out, _ := runMain(t, "version"); code != 0 || !strings.HasPrefix(out, "usher ") {
		t.Fatalf("version: %d %q", code, out)
	}
	if code, _, _ := runMain(t, "frobnicate"); code != 2 {
		t.Fatalf("unknown command exit %d, want 2", code)
	}
	if code, _, _ := runMain(t, "serve", "--nope"); code != 2 {
		t.Fatalf("bad flag exit %d, want 2", code)
	}
}

// startMain runs a long-running command in-process and returns the public
// and admin addresses once it listens, and a function that stops it and
// returns its exit code.
func startMain(t *testing.T, args ...string) (string, string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	var errb bytes.Buffer
	m := &Main{Stdout: io.Discard, Stderr: &errb, Ready: func(p, a string) { ready <- [2]string{p, a} }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, args) }()
	select {
	case addrs := <-ready:
		return addrs[0], addrs[1], func() int { cancel(); return <-done }
	case code := <-done:
		t.Fatalf("%v exited %d before listening:\n%s", args, code, errb.String())
	case <-time.After(20 * time.Second):
		t.Fatal("not listening after 20 s")
	}
	cancel()
	return "", "", nil
}

func TestServeShutsDownCleanly(t *testing.T) {
	dir := t.TempDir()
	origin := httpServer(t)
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: secret
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    total_active_users: 1
    new_users_per_minute: 10
    json_response_enabled: true
`, filepath.Join(dir, "data"), origin)
	path := writeConfig(t, cfg)
	for run := range 2 {
		pub, adm, stop := startMain(t, "serve", "--config", path)
		resp, err := http.Get("http://" + pub + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("run %d: GET / = %d", run, resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodGet, "http://"+adm+"/v1/rooms/sale/status", nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The first run admits its visitor; after the restart that session
		// still holds the room's only place, so the second visitor waits.
		want := `"active":1,"waiting":0`
		if run == 1 {
			want = `"active":1,"waiting":1`
		}
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("run %d: admin status %d %s, want %s", run, resp.StatusCode, body, want)
		}
		if code := stop(); code != 0 {
			t.Fatalf("run %d: serve exited %d after the signal", run, code)
		}
	}
}

func TestDemoServesTheShop(t *testing.T) {
	pub, adm, stop := startMain(t, "demo", "--listen", "127.0.0.1:0", "--admin", "127.0.0.1:0", "--visitors", "2")
	defer stop()
	resp, err := http.Get("http://" + pub + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(body) == 0 {
		t.Fatalf("demo shop: %d", resp.StatusCode)
	}
	if adm == "" {
		t.Fatal("demo has no admin listener")
	}
}

// httpServer returns the URL of a trivial origin.
func httpServer(t *testing.T) string {
	t.Helper()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func netListen() (net.Listener, error) { return net.Listen("tcp", "127.0.0.1:0") }
