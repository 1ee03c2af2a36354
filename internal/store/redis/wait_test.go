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

// TestWaitReplicas: with WaitReplicas, an admission (or a renewal)
// succeeds once the replica has it, and fails as unavailable (not replicated) while the
// replica does not acknowledge (stalled, or more replicas asked for than
// there are); the count stays on the primary, so nobody is let in over
// the limit on its account. Without WaitReplicas, the same admission
// succeeds with the replica stalled: that is what a failover can lose.
func TestWaitReplicas(t *testing.T) {
	primary := redistest.StartServer(t)
	replica := redistest.StartReplica(t, primary)
	// WAIT counts only the replicas the primary sees online, which can
	// come a moment after the replica sees its link up: a clean run under
	// -race once failed the first admission here.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(primary.Do("INFO", "replication"), "state=online"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the primary does not see its replica online: %s", primary.Do("INFO", "replication"))
		}
	}
	// WAIT waits up to half the timeout: 750 ms, which a replica on
	// loopback meets with room to spare even on a loaded machine (at
	// 400 ms, a clean run of the suite once saw the first admission's
	// 200 ms run out).
	const timeout = 1500 * time.Millisecond
	ctx := context.Background()
	t0 := storetest.T0
	waiting := mustOpen(t, redis.Options{Addrs: []string{primary.Addr()}, Timeout: timeout, WaitReplicas: 1})
	plain := mustOpen(t, redis.Options{Addrs: []string{primary.Addr()}, Timeout: timeout})
	two := mustOpen(t, redis.Options{Addrs: []string{primary.Addr()}, Timeout: timeout, WaitReplicas: 2})

	in := op(t0, 10, 100, time.Minute)
	if res := mustAdmit(t, waiting, "r", in); !res.Admitted || res.Active != 1 {
		t.Fatalf("admission with the replica up: %+v, want admitted with 1 active", res)
	}
	renew := func(now time.Time) error {
		_, err := waiting.Renew(ctx, "r", usher.RenewOp{Now: now, Visitor: in.Visitor,
			From: usher.Cell{Exp: in.ActiveExp, At: t0}, To: now.Unix() + 60, Counted: now, Keep: now.Unix() + 600})
		return err
	}
	if err := renew(t0.Add(time.Second)); err != nil {
		t.Fatalf("renewal with the replica up: %v", err)
	}
	if p, r := primary.Do("DBSIZE"), replica.Do("DBSIZE"); p != r || p == "0" {
		t.Errorf("after the admission the primary has %s keys, the replica %s: want the same", p, r)
	}

	_, err := two.Admit(ctx, "r", op(t0, 10, 100, time.Minute))
	checkNotReplicated(t, "two replicas asked for, one there", err)

	// The replica stalls (SIGSTOP): it takes the writes only once it
	// runs again.
	replica.Pause()
	start := time.Now()
	_, err = waiting.Admit(ctx, "r", op(t0, 10, 100, time.Minute))
	took := time.Since(start)
	checkNotReplicated(t, "replica stalled", err)
	if took > timeout+500*time.Millisecond {
		t.Errorf("the admission waited %v for the replica, want about half the timeout (%v)", took, timeout/2)
	}
	checkNotReplicated(t, "renewal, replica stalled", renew(t0.Add(2*time.Second)))
	if res := mustAdmit(t, plain, "r", op(t0, 10, 100, time.Minute)); !res.Admitted {
		t.Errorf("without WaitReplicas, an admission with the replica stalled: %+v, want admitted unacknowledged", res)
	}
	replica.Resume()
	st, err := plain.Stats(ctx, "r", t0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Active != 4 {
		t.Errorf("active = %d, want 4: the admissions not acknowledged are still counted on the primary", st.Active)
	}
}

func checkNotReplicated(t *testing.T, name string, err error) {
	t.Helper()
	if usher.ErrorCode(err) != usher.EUnavailable || !strings.Contains(err.Error(), "not replicated") {
		t.Errorf("%s: %v, want an %s error saying not replicated", name, err, usher.EUnavailable)
	}
}
