package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
)

// storeKillConfig: a room of 150 places, admissions not rate-limited in
// practice, sessions that outlast the test.
const storeKillConfig = `listen: %s
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    routes:
      - path: /
    total_active_users: 150
    new_users_per_minute: 100000
    session_duration: 1h
    json_response_enabled: true
`

// TestE2EAdmissionsSurviveKill9MidFlood: new visitors flood the real
// binary on the embedded store (its admissions go to the log, none
// compacted yet) and it is killed with SIGKILL while answers are being
// written. After the restart every admission whose answer reached a
// visitor is counted, and the room gives no more places than it has:
// admissions answered before the kill and after the restart come to at
// most its 150.
func TestE2EAdmissionsSurviveKill9MidFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	origin := bench.NewOrigin("shop")
	srv := httptest.NewServer(origin)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	addr := freeAddr(t)
	config := filepath.Join(dir, "usher.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(storeKillConfig, addr, filepath.Join(dir, "data"), srv.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startUsher(t, config, addr, "sale")

	tr := &http.Transport{MaxIdleConnsPerHost: 32}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	// newVisitor asks once without a cookie and reports whether it was
	// admitted (the origin answered).
	newVisitor := func() (bool, error) {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return false, err
		}
		return resp.StatusCode == http.StatusOK && resp.Header.Get(bench.HeaderOrigin) != "", nil
	}

	// Before the kill: 16 visitors at a time until about 100 are in, then
	// SIGKILL while the others are still asking.
	var before atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				in, err := newVisitor()
				if err != nil {
					return // the process is gone: this answer never came
				}
				if in {
					before.Add(1)
				}
			}
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for before.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	p.kill()
	cancel()
	wg.Wait()
	in := before.Load()
	if in < 100 {
		t.Fatalf("only %d admitted in 30 s before the kill", in)
	}

	startUsher(t, config, addr, "sale")
	log, _ := os.ReadFile(config + ".log")
	if !strings.Contains(string(log), "not closed cleanly") {
		t.Fatalf("the restart did not go through crash recovery; log:\n%s", log)
	}
	resp, err := http.Get("http://" + addr + "/__usher/status/sale")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Active int64 `json:"active"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if st.Active < in {
		t.Fatalf("after kill -9: %d active, but %d visitors were told they were in", st.Active, in)
	}
	// After the restart: new visitors take only the places left.
	var after int64
	for range 100 {
		ok, err := newVisitor()
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			after++
		}
	}
	t.Logf("admitted %d before the kill, %d counted active after the restart, %d admitted after", in, st.Active, after)
	if in+after > 150 {
		t.Fatalf("%d admitted before the kill and %d after: over the room's 150 places", in, after)
	}
}
