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

// TestLatencyScriptNotLoadedYet: a server that does not have a room
// script yet (its first use, or after a restart or a failover) answers
// the call in two round trips (EVALSHA, NOSCRIPT, then EVAL). With every
// reply 500 ms late and a 900 ms timeout, each round trip is within the
// timeout: the call costs two round trips of time and succeeds, for every
// room script. Slow is not down. (With one timeout over both round trips,
// each of these calls failed as unavailable.)
func TestLatencyScriptNotLoadedYet(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	const latency, timeout = 500 * time.Millisecond, 900 * time.Millisecond
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: timeout})
	ctx := context.Background()
	now := time.Now()
	o := op(now, 10, 100, time.Minute)
	mustAdmit(t, s, "r", o) // a visitor to renew
	px.Latency(latency)
	settle(ctx, s)

	// firstUse calls call with no script loaded, up to three times: a
	// round trip now and then takes a latency more than the latency (the
	// client's keep-alive on a loaded machine), which one attempt in three
	// may meet, where a single timeout over both round trips fails every
	// attempt.
	firstUse := func(name string, call func() error) {
		t.Helper()
		var err error
		for range 3 {
			srv.Do("SCRIPT", "FLUSH")
			start := time.Now()
			if err = call(); err == nil {
				if took := time.Since(start); took < 2*latency {
					t.Errorf("%s took %v: want two round trips (EVALSHA, EVAL)", name, took)
				}
				return
			}
		}
		t.Errorf("%s, script not loaded, replies %v late under a %v timeout: %v", name, latency, timeout, err)
	}
	firstUse("admission", func() error {
		_, err := s.Admit(ctx, "r", op(now, 10, 100, time.Minute))
		return err
	})
	firstUse("peek", func() error {
		_, _, err := s.Peek(ctx, "r", now, now.Unix())
		return err
	})
	firstUse("stats", func() error {
		_, err := s.Stats(ctx, "r", now)
		return err
	})
	n := int64(0)
	firstUse("renewal", func() error {
		n++
		at := now.Add(time.Duration(n) * time.Millisecond)
		_, err := s.Renew(ctx, "r", usher.RenewOp{Now: at, Visitor: o.Visitor, From: usher.Cell{Exp: o.ActiveExp, At: o.Counted},
			To: o.ActiveExp + n, Counted: at, Keep: o.ActiveExp + 10})
		return err
	})

	// Loaded: one round trip.
	mustAdmit(t, s, "r", op(now, 10, 100, time.Minute))
	start := time.Now()
	mustAdmit(t, s, "r", op(now, 10, 100, time.Minute))
	if took := time.Since(start); took >= 2*latency {
		t.Errorf("an admission with the script loaded took %v: want one round trip", took)
	}
}

// TestLatencyCallsOneAtATimeStayUp: a node's calls one at a time (an idle
// node's polls, a quiet room), every reply 1 s late under a 2 s timeout,
// and one call among them that times out (its reply 2.5 s late). Every
// other call succeeds in about a round trip: the call that timed out does
// not cost the connection. (Before the client always pipelined, a call
// alone on its connection that timed out closed it; the next call's
// reconnection, HELLO, and its own round trip then took the whole 2 s,
// failed, and closed it again: every call failed from then on.)
func TestLatencyCallsOneAtATimeStayUp(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: 2 * time.Second})
	ctx := context.Background()
	mustAdmit(t, s, "r", op(time.Now(), 10, 100, time.Minute)) // the script loaded
	px.Latency(2500 * time.Millisecond)
	if _, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute)); usher.ErrorCode(err) != usher.EUnavailable {
		t.Fatalf("admission 2.5 s late under a 2 s timeout: %v, want unavailable", err)
	}
	px.Clear()
	px.Latency(time.Second)
	settle(ctx, s)
	for i := range 5 {
		start := time.Now()
		if _, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute)); err != nil {
			t.Fatalf("admission %d after the one that timed out, replies 1 s late: %v (after %v)", i, err, time.Since(start))
		}
	}
}

// settle makes one call on the store's connection, whatever it answers:
// the first reply after a toxic is added to the proxy can take a round
// trip more than the latency.
func settle(ctx context.Context, s *redis.Store) { _, _ = s.RuntimeVersion(ctx) }
