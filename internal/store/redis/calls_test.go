package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestCalls: Calls counts the commands sent: the PING of Open, one per
// call, two for a script the server has not cached.
func TestCalls(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Do("SCRIPT", "FLUSH")
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: prefix(t)})
	ctx := context.Background()
	t0 := storetest.T0
	want := int64(1) // PING
	check := func(what string, add int64) {
		t.Helper()
		want += add
		if got := s.Calls(); got != want {
			t.Errorf("after %s: Calls() = %d, want %d", what, got, want)
		}
	}
	check("Open", 0)
	mustAdmit(t, s, "r", op(t0, 10, 100, time.Minute))
	check("the first Admit (EVALSHA, NOSCRIPT, EVAL)", 2)
	mustAdmit(t, s, "r", op(t0.Add(time.Second), 10, 100, time.Minute))
	check("a second Admit", 1)
	if _, err := s.LoadKeys(ctx); err != nil {
		t.Fatal(err)
	}
	check("LoadKeys", 1)
}
