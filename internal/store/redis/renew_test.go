package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestRenewAnsweredAfterByIsLate: a renewal whose answer comes back after
// its By is reported late (usher.ErrRenewLate), so that the caller keeps
// the ticket it had; if Redis still applies it, it counts the session
// longer, never shorter. One answered before its By is applied as
// ever.
func TestRenewAnsweredAfterByIsLate(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	ctx := context.Background()
	now := time.Now()
	o := op(now, 10, 100, time.Minute)
	if res := mustAdmit(t, s, "r", o); !res.Admitted {
		t.Fatalf("admission: %+v", res)
	}
	renewal := func(at time.Time, to int64, by time.Time) usher.RenewOp {
		return usher.RenewOp{Now: at, Visitor: o.Visitor, From: usher.Cell{Exp: o.ActiveExp, At: o.Counted},
			To: to, Counted: at, Keep: to, By: by}
	}

	// Redis holds every client's commands for 600 ms: the renewal, due
	// back within 150 ms, is answered late.
	srv.Do("CLIENT", "PAUSE", "600", "ALL")
	start := time.Now()
	_, err := s.Renew(ctx, "r", renewal(start, o.ActiveExp+10, start.Add(150*time.Millisecond)))
	if !errors.Is(err, usher.ErrRenewLate) {
		t.Fatalf("renewal answered after its By: err %v, want ErrRenewLate", err)
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the late renewal returned after %v: it should give up at its By (150 ms)", took)
	}

	// Once Redis runs again, the late renewal may have been applied (it
	// was counted to its later cell: the same ticket renewing now is a
	// replay of it) or not (the client gave it up before sending it: the
	// ticket renews now). Either way the session is counted once, and
	// never to less than the cell it had.
	time.Sleep(700 * time.Millisecond)
	at := time.Now()
	res, err := s.Renew(ctx, "r", renewal(at, o.ActiveExp+20, at.Add(5*time.Second)))
	if err != nil {
		t.Fatalf("renewal answered in time: %v", err)
	}
	if want := map[bool]int64{true: o.ActiveExp + 10, false: o.ActiveExp + 20}[res.Replay]; res.Record.Cell != want {
		t.Fatalf("after the late renewal: %+v, want the session counted to %d", res, want)
	}
	st, err := s.Stats(ctx, "r", time.Now())
	if err != nil || st.Active != 1 {
		t.Fatalf("stats: %+v %v, want the one session counted once", st, err)
	}

	// No By: no bound, as before.
	o2 := op(time.Now(), 10, 100, time.Minute)
	mustAdmit(t, s, "r", o2)
	at = time.Now()
	if _, err := s.Renew(ctx, "r", usher.RenewOp{Now: at, Visitor: o2.Visitor, From: usher.Cell{Exp: o2.ActiveExp, At: o2.Counted},
		To: o2.ActiveExp + 10, Counted: at, Keep: o2.ActiveExp + 10}); err != nil {
		t.Fatalf("renewal without By: %v", err)
	}
}
