package redistest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartFailoverSlowReplica is StartFailover with the replica's replication
// link through a proxy that delays everything the primary sends it
// (the replication stream, and the GETACK requests of WAIT) by lag: a
// replica on a slow or distant link. The replica's acknowledgements come
// back undelayed. It returns once the replica is in sync and every
// sentinel knows the replica and the other two sentinels. Everything
// stops when the test ends.
func StartFailoverSlowReplica(t testing.TB, lag time.Duration) (*Failover, *Proxy) {
	t.Helper()
	f := &Failover{DownAfter: 3 * time.Second}
	f.Primary = startServer(t, nil)
	link := StartProxy(t, f.Primary.Addr())
	link.Latency(lag)
	_, port, _ := strings.Cut(link.Addr(), ":")
	f.Replica = startServer(t, func(int) []string {
		return []string{"--replicaof", "127.0.0.1", port}
	})
	for range 3 {
		f.Sentinels = append(f.Sentinels, f.startSentinel(t))
	}
	f.wait(t, 30*time.Second, "the slow replica in sync and the sentinels acquainted", func() (bool, string) {
		info, err := do(f.Replica.Addr(), "INFO", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false, info
		}
		// The primary knows the replica by the port it listens on, not
		// the proxy's: that is the address the sentinels are told.
		info, err = do(f.Primary.Addr(), "INFO", "replication")
		if err != nil || !strings.Contains(info, "port="+strconv.Itoa(f.Replica.port)+",state=online") {
			return false, info
		}
		for _, s := range f.Sentinels {
			m, err := do(s.Addr(), "SENTINEL", "MASTER", MasterName)
			if err != nil {
				return false, err.Error()
			}
			fields := pairs(m)
			if fields["num-slaves"] != "1" || fields["num-other-sentinels"] != "2" {
				return false, s.Addr() + ": " + m
			}
		}
		return true, ""
	})
	return f, link
}

// ReplicaOffsets returns the replication offsets of the primary and of
// its first replica as the primary reports them (INFO replication's
// master_repl_offset and slave0's offset), 0 for either not found: the
// primary's offset less the replica's is the replication stream not yet
// acknowledged.
func (f *Failover) ReplicaOffsets() (primary, replica int64) {
	info, err := do(f.Primary.Addr(), "INFO", "replication")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
			primary, _ = strconv.ParseInt(v, 10, 64)
		}
		if v, ok := strings.CutPrefix(line, "slave0:"); ok {
			for _, kv := range strings.Split(v, ",") {
				if o, ok := strings.CutPrefix(kv, "offset="); ok {
					replica, _ = strconv.ParseInt(o, 10, 64)
				}
			}
		}
	}
	return primary, replica
}
