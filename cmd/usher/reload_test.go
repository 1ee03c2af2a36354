package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/ticket"
)

// The reload tests run serve in-process on a config file they rewrite, and
// drive it with visitors who each have a cookie jar.

// lockedBuffer is a bytes.Buffer safe for the logger and the test at once.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// reloadServer is a serve running in-process.
type reloadServer struct {
	path string // the config file
	addr string // the public listener
	log  *lockedBuffer
}

// startReloadServer writes body to a config file and serves it until the
// test ends; the test then waits for serve to return 0.
func startReloadServer(t *testing.T, body string) *reloadServer {
	t.Helper()
	s := &reloadServer{path: filepath.Join(t.TempDir(), "usher.yaml"), log: &lockedBuffer{}}
	s.write(t, body)
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	m := &Main{Stdout: io.Discard, Stderr: s.log, Ready: func(pub, _ string) { ready <- pub }}
	done := make(chan int, 1)
	go func() { done <- m.Run(ctx, []string{"serve", "--config", s.path}) }()
	select {
	case s.addr = <-ready:
	case code := <-done:
		cancel()
		t.Fatalf("serve exited %d before listening:\n%s", code, s.log)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("serve not listening after 20 s")
	}
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, s.log)
		}
	})
	return s
}

// write replaces the config file in one step (a rename), so that the
// watcher never reads half a file.
func (s *reloadServer) write(t *testing.T, body string) {
	t.Helper()
	tmp := s.path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, s.path); err != nil {
		t.Fatal(err)
	}
}

// waitLog waits until the log has every one of want, after the first skip
// bytes, and returns the log from skip on.
func (s *reloadServer) waitLog(t *testing.T, skip int, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		log := s.log.String()[skip:]
		missing := ""
		for _, w := range want {
			if !strings.Contains(log, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return log
		}
		if time.Now().After(deadline) {
			t.Fatalf("the log lacks %q after 10 s:\n%s", missing, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// reloadVisitor is a visitor with its own cookies. Like the waiting page,
// it checks in no earlier than its last counted check-in told it to (an
// earlier one changes nothing).
type reloadVisitor struct {
	name   string
	client *http.Client
	next   time.Time // when the last counted check-in said to come back
}

func newReloadVisitor(name string) *reloadVisitor {
	jar, _ := cookiejar.New(nil)
	return &reloadVisitor{name: name, client: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

// reloadAnswer is what a visitor got: the origin (admitted), a waiting
// answer (its position), or something else (status).
type reloadAnswer struct {
	status   int
	admitted bool
	waiting  bool
	position int64
	cookie   bool // the answer set the room's ticket cookie
	body     string
}

func (v *reloadVisitor) get(t *testing.T, url string) reloadAnswer {
	t.Helper()
	time.Sleep(time.Until(v.next))
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := v.client.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", v.name, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	a := reloadAnswer{status: resp.StatusCode, body: string(body)}
	for _, c := range resp.Cookies() {
		a.cookie = a.cookie || strings.HasPrefix(c.Name, "__usher_wr")
	}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		var doc struct {
			W *struct {
				Position int64 `json:"position"`
				Refresh  int64 `json:"refreshIntervalSeconds"`
			} `json:"usherWaitingRoom"`
		}
		if json.Unmarshal(body, &doc) == nil && doc.W != nil {
			a.waiting, a.position = true, doc.W.Position
			if a.cookie {
				v.next = time.Now().Add(time.Duration(doc.W.Refresh) * time.Second)
			}
			return a
		}
	}
	a.admitted = resp.StatusCode == http.StatusOK && string(body) == "ok"
	return a
}

// mustAdmit asserts that the visitor reaches the origin.
func (v *reloadVisitor) mustAdmit(t *testing.T, url, when string) {
	t.Helper()
	if a := v.get(t, url); !a.admitted {
		t.Fatalf("%s %s: %+v, want admitted", v.name, when, a)
	}
}

// mustWait asserts that the visitor waits at position (any when zero).
func (v *reloadVisitor) mustWait(t *testing.T, url string, position int64, when string) {
	t.Helper()
	if a := v.get(t, url); !a.waiting || (position > 0 && a.position != position) {
		t.Fatalf("%s %s: %+v, want waiting at position %d", v.name, when, a, position)
	}
}

// reloadConfig is the reload tests' config: room sale at /sale, and with
// other, a second room at /other. Waiters check in every second, so a
// visitor who checks in about every second stays in line.
func reloadConfig(listen, dataDir, origin string, watch bool, total int, other string) string {
	cfg := fmt.Sprintf(`listen: %s
watch_config: %v
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    routes:
      - path: /sale
    total_active_users: %d
    new_users_per_minute: 60
    session_duration: 5m
    refresh_interval: 1s
    json_response_enabled: true
`, listen, watch, dataDir, origin, total)
	if other != "" {
		cfg += fmt.Sprintf(`  - id: other
    origin: %s
    routes:
      - path: /other
    total_active_users: 1
    new_users_per_minute: %s
    session_duration: 5m
    refresh_interval: 1s
    json_response_enabled: true
`, origin, other)
	}
	return cfg
}

// TestReloadWatchConfig changes a watched config file three times: a valid
// change applies without dropping anyone, an invalid one and one that
// needs a restart are refused with the reason, and the running config
// keeps serving.
func TestReloadWatchConfig(t *testing.T) {
	t.Parallel()
	origin := httpServer(t)
	data := filepath.Join(t.TempDir(), "data")
	s := startReloadServer(t, reloadConfig("127.0.0.1:0", data, origin, true, 1, ""))
	sale, other := "http://"+s.addr+"/sale", "http://"+s.addr+"/other"

	// One admitted visitor fills the room; two wait, in order: c arrives
	// in a later second than b (arrivals within one second are level).
	a, b, c := newReloadVisitor("a"), newReloadVisitor("b"), newReloadVisitor("c")
	a.mustAdmit(t, sale, "first")
	b.mustWait(t, sale, 1, "second")
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 50*time.Millisecond)))
	c.mustWait(t, sale, 2, "third")
	if got := newReloadVisitor("x").get(t, other); got.status != http.StatusNotFound {
		t.Fatalf("/other before the reload: %+v, want 404 (no room, no default origin)", got)
	}

	t.Run("valid change applies", func(t *testing.T) {
		// One more place in sale, and a second room.
		skip := len(s.log.String())
		s.write(t, reloadConfig("127.0.0.1:0", data, origin, true, 2, "60"))
		// Poll until the new limit lets b in, keeping b and c in line.
		// c checks in first: with one more place, c (second in line) must
		// still wait behind b, so b goes in on its own ticket, not as a
		// new visitor (it would then be behind c).
		deadline := time.Now().Add(10 * time.Second)
		for {
			c.mustWait(t, sale, 2, "while the config reloads")
			if got := b.get(t, sale); got.admitted {
				break
			} else if !got.waiting || got.position != 1 {
				t.Fatalf("b while the config reloads: %+v, want waiting at position 1 or admitted", got)
			}
			if time.Now().After(deadline) {
				t.Fatalf("the new limit did not apply within 10 s; log:\n%s", s.log.String()[skip:])
			}
			time.Sleep(300 * time.Millisecond)
		}
		log := s.waitLog(t, skip, "config reloaded", "trigger=\"file changed\"", "rooms=2")
		t.Logf("log:\n%s", log)
		if strings.Contains(log, "refused") {
			t.Errorf("a reload was refused:\n%s", log)
		}
		a.mustAdmit(t, sale, "after the reload (its session holds)")
		b.mustAdmit(t, sale, "after its admission")
		c.mustWait(t, sale, 1, "after the reload, b gone in")
		x := newReloadVisitor("x")
		if got := x.get(t, other); !got.admitted || !got.cookie {
			t.Fatalf("/other after the reload: %+v, want admitted by room other with a ticket", got)
		}
		newReloadVisitor("y").mustWait(t, other, 1, "in room other, full")
	})
	if t.Failed() {
		return
	}

	t.Run("invalid change refused", func(t *testing.T) {
		// A negative limit in room other, and more places in sale: none of
		// it applies.
		skip := len(s.log.String())
		s.write(t, reloadConfig("127.0.0.1:0", data, origin, true, 10, "-5"))
		log := s.waitLog(t, skip, "config reload refused; the running config stays",
			"rooms[1] (other)", "new_users_per_minute", "must be at least 1, got -5")
		t.Logf("log:\n%s", log)
		if strings.Contains(log, "config reloaded") {
			t.Errorf("the invalid config was applied:\n%s", log)
		}
		c.mustWait(t, sale, 1, "after the refused reload (sale's limit stays 2)")
		a.mustAdmit(t, sale, "after the refused reload")
		b.mustAdmit(t, sale, "after the refused reload")
		newReloadVisitor("z").mustWait(t, other, 0, "in room other after the refused reload")
	})
	if t.Failed() {
		return
	}

	t.Run("restart needed refused", func(t *testing.T) {
		skip := len(s.log.String())
		s.write(t, reloadConfig("127.0.0.1:1", data, origin, true, 10, "60"))
		log := s.waitLog(t, skip, "config reload refused; the running config stays",
			`listen: changed from \"127.0.0.1:0\" to \"127.0.0.1:1\", which needs a restart (the listener is opened at start)`)
		t.Logf("log:\n%s", log)
		if strings.Contains(log, "config reloaded") {
			t.Errorf("a config with a new listen address was applied:\n%s", log)
		}
		c.mustWait(t, sale, 1, "after the refused reload (sale's limit stays 2)")
		a.mustAdmit(t, sale, "after the refused reload")
	})
}

// TestReloadSIGHUP reloads an unwatched config on SIGHUP, sent to the test
// process itself. It is not parallel: no other serve runs in the process
// meanwhile (parallel tests wait for the sequential ones), so the signal
// reloads only this one.
func TestReloadSIGHUP(t *testing.T) {
	// Catch SIGHUP for the whole test, so that a signal the reloader has
	// not subscribed to yet can never stop the process.
	hup := make(chan os.Signal, 8)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)

	origin := httpServer(t)
	data := filepath.Join(t.TempDir(), "data")
	s := startReloadServer(t, reloadConfig("127.0.0.1:0", data, origin, false, 1, ""))
	sale := "http://" + s.addr + "/sale"
	a, b := newReloadVisitor("a"), newReloadVisitor("b")
	a.mustAdmit(t, sale, "first")
	b.mustWait(t, sale, 1, "second")

	// Unwatched: a change of the file alone does nothing, even after
	// a few of the watcher's ticks.
	skip := len(s.log.String())
	s.write(t, reloadConfig("127.0.0.1:0", data, origin, false, 2, ""))
	for range 3 {
		time.Sleep(watchEvery)
		b.mustWait(t, sale, 1, "after an unwatched change")
	}
	if log := s.log.String()[skip:]; strings.Contains(log, "config reload") {
		t.Fatalf("an unwatched file was reloaded without SIGHUP:\n%s", log)
	}

	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(s.log.String()[skip:], "config reloaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no reload 10 s after SIGHUP:\n%s", s.log.String()[skip:])
		}
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitUntil := time.Now().Add(time.Second)
		for time.Now().Before(waitUntil) && !strings.Contains(s.log.String()[skip:], "config reloaded") {
			time.Sleep(20 * time.Millisecond)
		}
		b.get(t, sale) // stay in line
	}
	s.waitLog(t, skip, "trigger=SIGHUP")
	if got := b.get(t, sale); !got.admitted {
		t.Fatalf("b after the SIGHUP reload: %+v, want admitted with the new limit", got)
	}
	a.mustAdmit(t, sale, "after the SIGHUP reload")
}

// TestReloadRotatesKeys reloads a config whose key ring gains a new first
// key: new tickets are sealed with it, and tickets sealed with the old key
// still open while it stays in the ring.
func TestReloadRotatesKeys(t *testing.T) {
	t.Parallel()
	k1, _ := ticket.GenerateKey("k1")
	k2, _ := ticket.GenerateKey("k2")
	ring := func(keys ...usher.Key) string {
		out := "keys:\n"
		for _, k := range keys {
			out += fmt.Sprintf("  - id: %s\n    secret: %s\n", k.ID, ticket.EncodeSecret(k.Secret))
		}
		return out
	}
	origin := httpServer(t)
	data := filepath.Join(t.TempDir(), "data")
	base := reloadConfig("127.0.0.1:0", data, origin, true, 10, "")
	s := startReloadServer(t, ring(k1)+base)
	url := "http://" + s.addr + "/sale"
	v := newReloadVisitor("v")
	v.mustAdmit(t, url, "before the rotation")
	old := v.client.Jar.Cookies(mustURL(t, url))

	mark := len(s.log.String())
	s.write(t, ring(k2, k1)+base)
	s.waitLog(t, mark, "config reloaded")
	// The old ticket (sealed with k1) still opens.
	v.mustAdmit(t, url, "after the rotation")
	// A new visitor's ticket is sealed with k2: the ring without k1 opens it.
	n := newReloadVisitor("n")
	n.mustAdmit(t, url, "new after the rotation")
	r2, _ := ticket.NewRing([]usher.Key{k2})
	var opened bool
	for _, c := range n.client.Jar.Cookies(mustURL(t, url)) {
		if _, err := r2.Open(c.Value, "sale", c.Name); err == nil {
			opened = true
		}
	}
	if !opened {
		t.Fatal("a ticket issued after the rotation is not sealed with the new first key")
	}
	r1only, _ := ticket.NewRing([]usher.Key{k1})
	for _, c := range old {
		if _, err := r1only.Open(c.Value, "sale", c.Name); err != nil {
			t.Fatalf("test set-up: the first ticket was not sealed with k1: %v", err)
		}
	}
}

func mustURL(t *testing.T, s string) *neturl.URL {
	t.Helper()
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
