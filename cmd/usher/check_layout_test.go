package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSaysTheLayout: on Redis, usher check says which layout each
// room uses and why: one shard by default (its decisions fit one core),
// or, with shards: 3, a front and two back shards, all on one server
// unless the store is a Redis Cluster. It says from how many waiters
// ahead check-ins are far back (answered from views and batched): a room
// of 1,000 places and 3,000 a minute with the longest interval 2 m (2 m 12
// s with jitter, and a 31 s grace) is far back from 1,000 + 3,000 x
// ceil((2 x 163 s + 2 s) / 60 s) = 19,000; a random room's check-ins are
// all calls. On the embedded store it says nothing of a layout, and warns
// that the store ignores shards.
func TestCheckSaysTheLayout(t *testing.T) {
	t.Parallel()
	rooms := `rooms:
  - id: sale
    origin: http://127.0.0.1:3000
    total_active_users: 1000
    new_users_per_minute: 3000
  - id: draw
    origin: http://127.0.0.1:3000
    routes: [{path: /draw}]
    cookie_suffix: draw
    queueing_method: random
    total_active_users: 10
    new_users_per_minute: 10
  - id: tour
    origin: http://127.0.0.1:3000
    routes: [{path: /tour}]
    cookie_suffix: tour
    total_active_users: 1000
    new_users_per_minute: 3000
    shards: 3
`
	dir := t.TempDir()
	write := func(name, store string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(store+rooms), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	onRedis := write("redis.yaml", "store:\n  redis:\n    addrs: [127.0.0.1:6379]\n")
	onCluster := write("cluster.yaml", "store:\n  redis:\n    addrs: [127.0.0.1:7000, 127.0.0.1:7001, 127.0.0.1:7002]\n    cluster: true\n")
	embedded := write("embedded.yaml", "")
	const oneServer = "room tour: a front and 2 back shards (shards: 3): waiters behind the serving horizon are counted on the back shards, the front admits and keeps the line up to it." +
		" All its shards are on one Redis server (store.redis.cluster is off): they spread the room's memory and script work over hash slots, not over cores."
	code, out, errs := runMain(t, "check", "--config", onRedis)
	if code != 0 {
		t.Fatalf("check exited %d: %s", code, errs)
	}
	for _, want := range []string{
		"Layout on Redis",
		"room sale: one shard (the default): its decisions fit one Redis core up to about 16,000 a second, a line of a few million.",
		"room sale: check-ins and new visitors with 19000 or more live waiters ahead are far back",
		"room draw: one shard (the default)",
		"room draw: random: every check-in is one call",
		oneServer,
		"room tour: check-ins and new visitors with 19000 or more live waiters ahead are far back",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usher check on Redis does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "room tour: one shard") || strings.Contains(out, "room sale: a front") {
		t.Errorf("usher check on Redis gives a room the other layout:\n%s", out)
	}
	code, out, errs = runMain(t, "check", "--config", onCluster)
	if code != 0 {
		t.Fatalf("check on a cluster exited %d: %s", code, errs)
	}
	if want := "room tour: a front and 2 back shards (shards: 3)"; !strings.Contains(out, want) || strings.Contains(out, "one Redis server") {
		t.Errorf("usher check on a Redis Cluster does not say %q, or says the shards share one server:\n%s", want, out)
	}
	code, out, errs = runMain(t, "check", "--config", embedded)
	if code != 0 || strings.Contains(out, "Layout on Redis") {
		t.Errorf("usher check on the embedded store (exit %d: %s) speaks of Redis's layout:\n%s", code, errs, out)
	}
	if want := `room "tour" sets shards: 3, but the embedded store is one process and ignores it`; !strings.Contains(out, want) {
		t.Errorf("usher check on the embedded store does not warn %q:\n%s", want, out)
	}
}
