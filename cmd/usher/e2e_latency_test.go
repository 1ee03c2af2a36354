package main

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// latencyConfig is multiConfig with a 2 s timeout.
const latencyConfig = `listen: %s
store:
  redis:
    addrs: [%s]
    fail_mode: closed
    timeout: 2s
rooms:
  - id: sale
    name: Seal Brewing spring sale
    origin: %s
    routes:
      - path: /
    total_active_users: 20
    new_users_per_minute: 60
    session_duration: 15s
    queueing_method: fifo
    refresh_interval: 2s
    json_response_enabled: true
`

// TestE2ERedisLatencyBelowTimeout runs the flash crowd through three
// nodes whose every Redis reply comes 1 s late (a toxiproxy latency
// toxic between the nodes and a real redis-server), under a 2 s timeout:
// slow is not down, so the limits hold, nobody browsing is sent back to
// the line and no waiter is passed by a later arrival (issue 23, item 4).
//
// It does not hold yet: the one run so far (2026-11-29, loaded 2-core
// machine) measured 2 FIFO inversions, max active 21 of 20, a waiter
// waiting 12.4 s with a place free, 0 request errors and 0 re-queued. So
// it runs only with USHER_E2E_KNOWN_FAILING=1, until that is fixed; the
// assertions are the target, not loosened.
func TestE2ERedisLatencyBelowTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	if os.Getenv("USHER_E2E_KNOWN_FAILING") == "" {
		t.Skip("known failing (issue 23, item 4: 2 FIFO inversions and max active 21 with replies 1 s late): set USHER_E2E_KNOWN_FAILING=1 to run")
	}
	t.Parallel()
	rd := redistest.StartServer(t)
	px := redistest.StartProxy(t, rd.Addr())
	origin := httptest.NewServer(bench.NewOrigin("slow redis shop"))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	c := &cluster{}
	for i := range 3 {
		addr := freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf(latencyConfig, addr, px.Addr(), origin.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
		c.nodes = append(c.nodes, startUsher(t, path, addr, "sale"))
		c.configs, c.addrs = append(c.configs, path), append(c.addrs, addr)
	}
	c.lb = newBalancer(c.addrs)
	t.Cleanup(c.lb.Close)
	px.Latency(time.Second)
	tl, res := runCrowd(t, c)
	js, _ := json.MarshalIndent(res, "", "  ")
	t.Logf("report:\n%s\nrequest errors: %v", js, tl.ErrorCounts())
	if res.Admitted < 50 {
		t.Errorf("only %d admitted", res.Admitted)
	}
	if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 {
		t.Errorf("limits: active %d, %d admissions in 60 s", res.MaxActive, res.MaxRate)
	}
	if res.FIFOInversions != 0 {
		t.Errorf("%d FIFO inversions with replies 1 s late under a 2 s timeout", res.FIFOInversions)
	}
	if res.RequeuedWhileBrowsing != 0 {
		t.Errorf("%d visitors sent back to the line while browsing", res.RequeuedWhileBrowsing)
	}
}
