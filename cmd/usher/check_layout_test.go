package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckSaysTheLayout: on Redis, usher check says that a room lives on
// one shard and from how many waiters ahead its check-ins are far back
// (answered from views and batched): a room of 1,000 places and 3,000 a
// minute with the longest interval 2 m (2 m 12 s with jitter, and a 31 s
// grace) is far back from 1,000 + 3,000 x ceil((2 x 163 s + 2 s) / 60 s)
// = 19,000; a random room's check-ins are all calls. On the embedded
// store it says nothing of it.
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
`
	dir := t.TempDir()
	onRedis := filepath.Join(dir, "redis.yaml")
	embedded := filepath.Join(dir, "embedded.yaml")
	if err := os.WriteFile(onRedis, []byte("store:\n  redis:\n    addrs: [127.0.0.1:6379]\n"+rooms), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(embedded, []byte(rooms), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runMain(t, "check", "--config", onRedis)
	if code != 0 {
		t.Fatalf("check exited %d: %s", code, errs)
	}
	for _, want := range []string{
		"a room lives on one Redis shard",
		"room sale: check-ins and new visitors with 19000 or more live waiters ahead are far back",
		"room draw: random: every check-in is one call",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("usher check on Redis does not say %q:\n%s", want, out)
		}
	}
	if code, out, _ = runMain(t, "check", "--config", embedded); code != 0 || strings.Contains(out, "Layout on Redis") {
		t.Errorf("usher check on the embedded store (exit %d) speaks of Redis's layout:\n%s", code, out)
	}
}
