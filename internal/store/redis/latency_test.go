package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// TestLatencyBelowAndAboveTimeout puts a latency-injecting proxy between
// the store and a real server: replies 300 ms late cost time and succeed
// under a 2 s timeout; replies 3 s late fail as unavailable within about
// the timeout; with the latency removed, calls succeed again.
func TestLatencyBelowAndAboveTimeout(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	const timeout = 2 * time.Second
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: timeout})
	ctx := context.Background()
	t0 := storetest.T0
	// The first admission loads the script (EVALSHA, then EVAL): two
	// round trips. Made before the latency, it leaves one per call.
	mustAdmit(t, s, "r", op(t0, 10, 100, time.Minute))

	px.Latency(300 * time.Millisecond)
	start := time.Now()
	if res := mustAdmit(t, s, "r", op(t0, 10, 100, time.Minute)); !res.Admitted {
		t.Fatalf("admission 300 ms late: %+v", res)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("the admission took %v: the latency was not applied", took)
	}

	px.Clear()
	px.Latency(3 * time.Second)
	start = time.Now()
	_, err := s.Admit(ctx, "r", op(t0, 10, 100, time.Minute))
	if usher.ErrorCode(err) != usher.EUnavailable {
		t.Errorf("admission 3 s late with a 2 s timeout: %v, want %s", err, usher.EUnavailable)
	}
	if took := time.Since(start); took > timeout+500*time.Millisecond {
		t.Errorf("the late admission failed after %v, want about the timeout", took)
	}

	px.Clear()
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := s.Admit(ctx, "r", op(t0, 10, 100, time.Minute))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("admission with the latency removed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
