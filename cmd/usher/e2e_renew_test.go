package main

import (
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

const renewLateConfig = `listen: %s
admin:
  listen: %s
  token: e2e-write
store:
  redis:
    addrs: [%s]
    timeout: 5s
rooms:
  - id: sale
    origin: %s
    total_active_users: 100
    new_users_per_minute: 100
    session_duration: 10s
`

// TestE2ERenewalAnsweredLate runs the binary on a real redis-server and
// holds Redis (CLIENT PAUSE) while an admitted visitor makes a request a
// little before its 10 s session ends. The renewal cannot come back before
// the session's count may have lapsed: the node gives it up then, well
// within the store's 5 s timeout, serves the visitor on the ticket it had,
// counts the renewal in usher_renewals_late_total and keeps using the
// store.
func TestE2ERenewalAnsweredLate(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	origin := httptest.NewServer(bench.NewOrigin("renew shop"))
	t.Cleanup(origin.Close)
	pub, adm := freeAddr(t), freeAddr(t)
	path := filepath.Join(t.TempDir(), "usher.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(renewLateConfig, pub, adm, rd.Addr(), origin.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	startUsher(t, path, pub, "sale")
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second}
	get := func() (*http.Response, time.Duration) {
		t.Helper()
		start := time.Now()
		resp, err := c.Get("http://" + pub + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp, time.Since(start)
	}
	sent := time.Now()
	if resp, _ := get(); resp.Header.Get(bench.HeaderOrigin) == "" {
		t.Fatalf("first visit: %d without the origin's answer, want admitted to an empty room", resp.StatusCode)
	}
	// The session ends 10 s after the admission, or up to a second later
	// (counts end on whole seconds), and its count 250 ms after that.
	time.Sleep(time.Until(sent.Add(9300 * time.Millisecond)))
	rd.Do("CLIENT", "PAUSE", "6000", "ALL")
	paused := time.Now()
	resp, took := get()
	if resp.Header.Get(bench.HeaderOrigin) == "" {
		t.Fatalf("request near the session's end, Redis held: %d without the origin's answer, want served on its ticket", resp.StatusCode)
	}
	if took >= 5*time.Second {
		t.Errorf("request near the session's end took %v: the renewal should be given up by the count's end, not the store's timeout", took)
	}
	time.Sleep(time.Until(paused.Add(6500 * time.Millisecond)))
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := adminGet(t, adm, "e2e-write", "/metrics")
		late, okLate := metricValue(body, "usher_renewals_late_total")
		up, okUp := metricValue(body, "usher_store_up")
		if code == 200 && okLate && late == 1 && okUp && up == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the pause: usher_renewals_late_total %v (found %v), usher_store_up %v (found %v), want 1 and 1", late, okLate, up, okUp)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
