package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestE2EFaultClusterMasterKilled runs the crowd through three nodes on
// a Redis Cluster of three masters with a replica each
// (cluster-node-timeout 2 s), and kills (SIGKILL) the master that holds
// the room 10 s into the surge: the cluster promotes its replica, the
// nodes follow the new slot map, and, as with a Sentinel failover, what
// the master had not yet replicated is lost: the limits may be exceeded
// by those writes, for at most a session. Nobody browsing is sent back.
func TestE2EFaultClusterMasterKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about two minutes")
	}
	t.Parallel()
	const nodeTimeout = 2 * time.Second
	rc := redistest.StartClusterReplicas(t, 3, nodeTimeout)
	store := redisStore(rc.Addrs(), true, "    timeout: 200ms\n")
	c := startFaultNodes(t, []string{store, store, store})
	const roomKey = "{usher:sale}:m"
	type outcome struct {
		from, to time.Time
		killed   string
		err      error
	}
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() { done <- o }()
		time.Sleep(10 * time.Second)
		m := rc.MasterOf(roomKey)
		if m == nil {
			o.err = fmt.Errorf("no master serves %s", roomKey)
			return
		}
		o.killed = m.Addr()
		o.from = time.Now()
		m.Kill()
		for deadline := o.from.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if n := rc.MasterOf(roomKey); n != nil && rc.Healthy(3) {
				o.to = time.Now()
				return
			}
		}
		o.err = fmt.Errorf("the cluster did not promote a replica of %s within 30 s", o.killed)
	}()
	tl, res := runCrowd(t, c)
	o := <-done
	if o.err != nil {
		t.Fatal(o.err)
	}
	t.Logf("killed the master %s holding %s; the cluster was whole again %v later", o.killed, roomKey, o.to.Sub(o.from).Round(time.Millisecond))
	f := measureFault(t, "cluster master killed", tl, res, o.from, o.to)
	// As with Sentinel (TestE2ESentinelFailover): async replication on
	// loopback loses a few writes at most.
	f.check(t, 3, 3)
	if f.after.IsZero() {
		t.Fatal("nobody was admitted after the promotion: the nodes did not follow the cluster")
	}
	if gap := f.next.Sub(o.from); gap > 20*time.Second {
		t.Errorf("first admission %v after the kill, want within 20 s (node timeout %v, then promotion)", gap, nodeTimeout)
	}
	for i, addr := range c.addrs {
		if code := statusCode(addr); code != http.StatusOK {
			t.Errorf("node %d answers its status with %d after the promotion", i, code)
		}
	}
}
