package redis_test

import (
	"context"
	"strings"
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
// reply 400 ms late and a 1 s timeout, each round trip is within the
// timeout: the call costs two round trips of time and succeeds, for every
// room script. Slow is not down. (With one timeout over both round trips,
// each of these calls failed as unavailable.) The margin is what the
// design guarantees: each round trip has a timeout of its own, and the
// store's one connection, open before the latency, costs a reply the
// latency and nothing more, so 600 ms of each timeout are spare.
func TestLatencyScriptNotLoadedYet(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	const latency, timeout = 400 * time.Millisecond, time.Second
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: timeout})
	ctx := context.Background()
	now := time.Now()
	o := op(now, 10, 100, time.Minute)
	mustAdmit(t, s, "r", o) // a visitor to renew
	conns := usherConns(t, srv)
	px.Latency(latency)

	firstUse := func(name string, call func() error) {
		t.Helper()
		srv.Do("SCRIPT", "FLUSH")
		start := time.Now()
		if err := call(); err != nil {
			t.Errorf("%s, script not loaded, replies %v late under a %v timeout: %v", name, latency, timeout, err)
			return
		}
		if took := time.Since(start); took < 2*latency {
			t.Errorf("%s took %v: want two round trips (EVALSHA, EVAL)", name, took)
		}
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
	firstUse("renewal", func() error {
		at := now.Add(time.Millisecond)
		_, err := s.Renew(ctx, "r", usher.RenewOp{Now: at, Visitor: o.Visitor, From: usher.Cell{Exp: o.ActiveExp, At: o.Counted},
			To: o.ActiveExp + 1, Counted: at, Keep: o.ActiveExp + 10})
		return err
	})

	// Loaded (the renewal's SCRIPT FLUSH unloaded the admission): one
	// round trip.
	mustAdmit(t, s, "r", op(now, 10, 100, time.Minute))
	start := time.Now()
	mustAdmit(t, s, "r", op(now, 10, 100, time.Minute))
	if took := time.Since(start); took >= 2*latency {
		t.Errorf("an admission with the script loaded took %v: want one round trip", took)
	}
	if got := usherConns(t, srv); got != conns {
		t.Errorf("the store's connections went from %s to %s: slow calls cost it its connection", conns, got)
	}
}

// TestLatencyCallsOneAtATimeStayUp: a node's calls one at a time (an idle
// node's polls, a quiet room), every reply 1 s late under a 2 s timeout,
// and one call among them that times out (its reply 2.5 s late). Every
// other call succeeds, on the connection the store opened before the
// latency: neither a slow call nor one that timed out costs the
// connection.
//
// What the test asserts is what the design guarantees, not a race
// against the timeout: the store has one connection, dialled by Open, and
// every call is pipelined on it, so a reply waits for the latency and for
// nothing else (not for a handshake, not for the keep-alive PING, whose
// reply is pipelined like any other), and a call that times out is
// abandoned without closing the connection. A call then costs one round
// trip, 1 s, and the other second of the timeout is spare. (Before, the
// client opened a second connection on the first call it happened to
// route there: its handshake and the call took two round trips, 2 s, and
// the call failed; a handshake that timed out closed the connection, and
// the next call dialled it again.)
func TestLatencyCallsOneAtATimeStayUp(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: 2 * time.Second})
	ctx := context.Background()
	mustAdmit(t, s, "r", op(time.Now(), 10, 100, time.Minute)) // the script loaded
	conns := usherConns(t, srv)
	px.Latency(2500 * time.Millisecond)
	if _, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute)); usher.ErrorCode(err) != usher.EUnavailable {
		t.Fatalf("admission 2.5 s late under a 2 s timeout: %v, want unavailable", err)
	}
	px.Clear()
	px.Latency(time.Second)
	for i := range 5 {
		start := time.Now()
		if _, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute)); err != nil {
			t.Fatalf("admission %d after the one that timed out, replies 1 s late: %v (after %v)", i, err, time.Since(start))
		}
		if took := time.Since(start); took < time.Second {
			t.Fatalf("admission %d took %v: the latency was not applied", i, took)
		}
	}
	if got := usherConns(t, srv); got != conns {
		t.Errorf("the store's connections went from %s to %s: a slow call cost it its connection", conns, got)
	}
}

// usherConns returns the ids of the server's connections named usher (the
// store's), as CLIENT LIST shows them, and fails the test unless there is
// exactly one.
func usherConns(t *testing.T, srv *redistest.Server) string {
	t.Helper()
	var ids []string
	for _, line := range strings.Split(srv.Do("CLIENT", "LIST"), "\n") {
		if !strings.Contains(line, " name=usher ") {
			continue
		}
		id, _, _ := strings.Cut(line, " ")
		ids = append(ids, id)
	}
	if len(ids) != 1 {
		t.Fatalf("the store has %d connections to the server (%v), want one", len(ids), ids)
	}
	return ids[0]
}

// TestLatencyConnectionLostUnderLatency: the server drops the store's
// connection (CLIENT KILL, as a restart or a proxy's idle timeout would)
// while every reply is 1 s late under a 2 s timeout. A call sent before
// the client sees the connection closed (the proxy passes the close on
// behind the latency) fails with it; the next call opens a new
// connection, whose handshake is a round trip of its own before the
// call's, and may fail too (two round trips, the whole timeout); but the
// connection it opened stays, and every call after it succeeds in one
// round trip. A lost connection costs at most two calls, never the store.
func TestLatencyConnectionLostUnderLatency(t *testing.T) {
	srv := redistest.StartServer(t)
	px := redistest.StartProxy(t, srv.Addr())
	s := mustOpen(t, redis.Options{Addrs: []string{px.Addr()}, Timeout: 2 * time.Second})
	ctx := context.Background()
	mustAdmit(t, s, "r", op(time.Now(), 10, 100, time.Minute)) // the script loaded
	id := strings.TrimPrefix(usherConns(t, srv), "id=")
	px.Latency(time.Second)
	srv.Do("CLIENT", "KILL", "ID", id)
	var errs []error
	for {
		_, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute))
		if err == nil {
			break
		}
		if errs = append(errs, err); len(errs) > 2 {
			t.Fatalf("three admissions failed after the connection was lost, replies 1 s late: %v", errs)
		}
	}
	t.Logf("%d admissions failed as the connection was lost: %v", len(errs), errs)
	conns := usherConns(t, srv)
	for i := range 4 {
		start := time.Now()
		if _, err := s.Admit(ctx, "r", op(time.Now(), 10, 100, time.Minute)); err != nil {
			t.Fatalf("admission %d after the connection was lost, replies 1 s late: %v (after %v)", i, err, time.Since(start))
		}
	}
	if got := usherConns(t, srv); got != conns {
		t.Errorf("the store's connections went from %s to %s: slow calls cost it its new connection", conns, got)
	}
}
