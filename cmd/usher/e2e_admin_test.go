package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// adminNodeConfig is one node of TestE2EAdminPropagation: its own public
// and admin listeners, one Redis, a room with room to spare.
const adminNodeConfig = `listen: %s
admin:
  listen: %s
  token: e2e-write
store:
  redis:
    addrs: [%s]
    timeout: 2s
rooms:
  - id: sale
    origin: %s
    total_active_users: 10000
    new_users_per_minute: 10000
    json_response_enabled: true
`

// startAdminNodes starts n usher nodes (the binary) of adminNodeConfig
// on one real redis-server, with a sample origin named name, and returns
// their public and admin addresses and their config files (each node logs
// to its file's name and .log).
func startAdminNodes(t *testing.T, n int, name string) (pubs, adms, paths []string) {
	t.Helper()
	rd := redistest.StartServer(t)
	origin := httptest.NewServer(bench.NewOrigin(name))
	t.Cleanup(origin.Close)
	dir := t.TempDir()
	for i := range n {
		pub, adm := freeAddr(t), freeAddr(t)
		path := filepath.Join(dir, fmt.Sprintf("node%d.yaml", i))
		if err := os.WriteFile(path, []byte(fmt.Sprintf(adminNodeConfig, pub, adm, rd.Addr(), origin.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
		startUsher(t, path, pub, "sale")
		pubs, adms, paths = append(pubs, pub), append(adms, adm), append(paths, path)
	}
	return pubs, adms, paths
}

// propagationBound is how soon a change made on one node must be in force
// on the others (the bound; nodes poll every second).
const propagationBound = 2 * time.Second

// TestE2EAdminPropagation starts three usher nodes (the binary) on one
// real redis-server, switches queue_all on through node 1's admin API,
// and measures how long until a new visitor waits on nodes 2 and 3; then
// switches it off through node 2 and measures the way back.
func TestE2EAdminPropagation(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	pubs, adms, _ := startAdminNodes(t, 3, "admin shop")
	for i, pub := range pubs {
		if visitorWaits(t, pub) {
			t.Fatalf("node %d: a new visitor waits before any change", i+1)
		}
	}

	switchOn := func(node int, on bool) time.Time {
		t.Helper()
		c := admin.NewClient(adms[node], "e2e-write")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		v, err := c.Room(ctx, "sale")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.PatchRoom(ctx, "sale", v.ETag, map[string]any{"queue_all": on}); err != nil {
			t.Fatalf("node %d: queue_all %v: %v", node+1, on, err)
		}
		return time.Now()
	}
	// measure returns how long after at a new visitor gets want (waiting or
	// not) on the node, polling every 20 ms, up to twice the bound.
	measure := func(node int, at time.Time, want bool) time.Duration {
		deadline := at.Add(2 * propagationBound)
		for time.Now().Before(deadline) {
			if visitorWaits(t, pubs[node]) == want {
				return time.Since(at)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return -1
	}
	check := func(what string, from int, on bool) {
		at := switchOn(from, on)
		var wg sync.WaitGroup
		delays := make([]time.Duration, 3)
		for i := range 3 {
			wg.Go(func() { delays[i] = measure(i, at, on) })
		}
		wg.Wait()
		for i, d := range delays {
			switch {
			case d < 0:
				t.Errorf("%s on node %d: not in force on node %d after %s", what, from+1, i+1, 2*propagationBound)
			case d > propagationBound:
				t.Errorf("%s on node %d: in force on node %d after %s, more than %s", what, from+1, i+1, d.Round(time.Millisecond), propagationBound)
			default:
				t.Logf("%s on node %d: in force on node %d after %s", what, from+1, i+1, d.Round(time.Millisecond))
			}
		}
	}
	check("queue_all on", 0, true)
	check("queue_all off", 1, false)

	// Every node reads the same audit log.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	au, err := admin.NewClient(adms[2], "e2e-write").Audit(ctx, "sale", 10, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(au.Entries) != 2 || au.Entries[0].After.(map[string]any)["queue_all"] != false || au.Entries[1].After.(map[string]any)["queue_all"] != true {
		t.Errorf("the audit log on node 3: %+v", au.Entries)
	}
}
