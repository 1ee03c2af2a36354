package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// MasterName is the name the sentinels of StartFailover monitor the
// primary under.
const MasterName = "usher-primary"

// Failover is a primary, a replica of it and three sentinels that promote
// the replica when the primary stops answering for DownAfter.
type Failover struct {
	// Primary and Replica are the servers as started; after a failover
	// the replica is the primary (see Current).
	Primary, Replica *Server
	// Sentinels watch the primary (quorum 2).
	Sentinels []*Server
	// DownAfter is how long the primary may not answer before the
	// sentinels hold it down and fail over.
	DownAfter time.Duration
}

// StartFailover starts a primary, a replica replicating it and three
// sentinels (redis-server --sentinel) monitoring it as MasterName, with a
// down-after of three seconds, so that a failover takes a few seconds and
// a server starved of CPU for a second on a loaded machine is not failed
// over by mistake (with one second, a run of the whole suite on two
// cores once saw the sentinels fail the promoted replica over again). It
// returns once the replica is in sync and every sentinel knows the
// replica and the other two sentinels. Everything stops when the test
// ends.
func StartFailover(t testing.TB) *Failover {
	t.Helper()
	f := &Failover{DownAfter: 3 * time.Second}
	f.Primary = startServer(t, nil)
	f.Replica = startReplica(t, f.Primary)
	for range 3 {
		f.Sentinels = append(f.Sentinels, f.startSentinel(t))
	}
	f.wait(t, 20*time.Second, "the replica in sync and the sentinels acquainted", func() (bool, string) {
		info, err := do(f.Replica.Addr(), "INFO", "replication")
		if err != nil || !strings.Contains(info, "master_link_status:up") {
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
	return f
}

// StartReplica starts a redis-server replicating primary and returns once
// it is in sync.
func StartReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	r := startReplica(t, primary)
	deadline := time.Now().Add(20 * time.Second)
	for {
		info, err := do(r.Addr(), "INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: replica %s not in sync: %s", r.Addr(), info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func startReplica(t testing.TB, primary *Server) *Server {
	t.Helper()
	return startServer(t, func(int) []string {
		return []string{"--replicaof", "127.0.0.1", strconv.Itoa(primary.port)}
	})
}

// startSentinel starts one sentinel monitoring f.Primary.
func (f *Failover) startSentinel(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server not found: install it (make test installs it as root)")
	}
	var last error
	for range 5 {
		s := &Server{t: t, bin: bin, dir: t.TempDir(), port: freePort(t)}
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		conf := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d 2\n"+
			"sentinel down-after-milliseconds %[1]s %[3]d\n"+
			"sentinel failover-timeout %[1]s 10000\n"+
			"sentinel parallel-syncs %[1]s 1\n",
			MasterName, f.Primary.port, f.DownAfter.Milliseconds())
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if last = s.start(); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("redistest: sentinel: %v", last)
	return nil
}

// SentinelAddrs returns the sentinels' host:port addresses.
func (f *Failover) SentinelAddrs() []string {
	var out []string
	for _, s := range f.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// Current returns the address every sentinel names as the primary, or ""
// while they disagree or cannot be reached.
func (f *Failover) Current() string {
	var at string
	for i, s := range f.Sentinels {
		reply, err := do(s.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName)
		if err != nil {
			return ""
		}
		addr := strings.Join(strings.Split(strings.TrimSpace(reply), "\n"), ":")
		if i > 0 && addr != at {
			return ""
		}
		at = addr
	}
	return at
}

// Promoted reports whether every sentinel names the replica as the
// primary.
func (f *Failover) Promoted() bool { return f.Current() == f.Replica.Addr() }

// RestartPrimary starts the stopped primary again on its port, with no
// data, as a supervisor would after a crash: the sentinels then make it a
// replica of the promoted one. It returns its error rather than failing
// the test, for use off the test's goroutine.
func (f *Failover) RestartPrimary() error { return f.Primary.start() }

// ReplicaJoined reports whether the server the sentinels name as the
// primary is one, with a replica of its own online (after a failover, the
// old primary restarted and made a replica by the sentinels): what
// wait_replicas needs to confirm anything.
func (f *Failover) ReplicaJoined() bool {
	cur := f.Current()
	if cur == "" {
		return false
	}
	info, err := do(cur, "INFO", "replication")
	return err == nil && strings.Contains(info, "role:master") && strings.Contains(info, "state=online")
}

// WaitPrimary waits until every sentinel names the same server as the
// primary, that server is not the one killed (the Primary as first
// started, before it rejoined as a replica), unless the sentinels have
// since failed over to it again, and it says it is a primary; it fails
// the test after within. It returns the address and whether it is the
// replica promoted (false only after a second failover, which
// FailoverEvents shows).
func (f *Failover) WaitPrimary(within time.Duration) (addr string, promoted bool) {
	f.Primary.t.Helper()
	f.wait(f.Primary.t, within, "primary named by the sentinels", func() (bool, string) {
		cur := f.Current()
		if cur == "" {
			return false, "the sentinels disagree or do not answer"
		}
		role, err := do(cur, "ROLE")
		if err != nil || !strings.HasPrefix(role, "master") {
			return false, fmt.Sprintf("the sentinels name %s, whose role is %q (%v)", cur, role, err)
		}
		addr = cur
		return true, ""
	})
	return addr, addr == f.Replica.Addr()
}

// WaitReplicated waits until the replica has everything the primary has
// written so far (its replication offset at least the primary's), and
// fails the test after within. (A WAIT sent on a connection of its own
// does not do this: it counts the replicas that acknowledged that
// connection's own writes, none, so it returns at once.)
func (f *Failover) WaitReplicated(within time.Duration) {
	f.Primary.t.Helper()
	want := pairsColon(f.Primary.Do("INFO", "replication"))["master_repl_offset"]
	f.wait(f.Primary.t, within, "replica caught up with the primary", func() (bool, string) {
		info, err := do(f.Replica.Addr(), "INFO", "replication")
		if err != nil {
			return false, err.Error()
		}
		got := pairsColon(info)["slave_repl_offset"]
		w, _ := strconv.ParseInt(want, 10, 64)
		g, err := strconv.ParseInt(got, 10, 64)
		return err == nil && g >= w, fmt.Sprintf("replica at offset %s, primary at %s", got, want)
	})
}

// pairsColon reads an INFO reply's name:value lines.
func pairsColon(info string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(info, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			out[k] = v
		}
	}
	return out
}

// FailoverEvents returns the lines of the sentinels' logs that record a
// change of the primary's state (down, elected, switched), oldest first
// per sentinel: what a test logs to show which failovers happened.
func (f *Failover) FailoverEvents() []string {
	var out []string
	for _, s := range f.Sentinels {
		log, err := os.ReadFile(filepath.Join(s.dir, "redis.log"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(log), "\n") {
			for _, ev := range []string{"+sdown", "-sdown", "+odown", "+elected-leader", "+switch-master", "+convert-to-slave"} {
				if strings.Contains(line, ev+" ") {
					out = append(out, s.Addr()+": "+strings.TrimSpace(line))
					break
				}
			}
		}
	}
	return out
}

// wait polls ok every 50ms until it holds, failing the test with what
// after within.
func (f *Failover) wait(t testing.TB, within time.Duration, what string, ok func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		done, last := ok()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: no %s after %v: %s", what, within, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pairs reads a reply of alternating names and values, one per line.
func pairs(reply string) map[string]string {
	lines := strings.Split(strings.TrimSpace(reply), "\n")
	out := make(map[string]string, len(lines)/2)
	for i := 0; i+1 < len(lines); i += 2 {
		out[strings.TrimSpace(lines[i])] = strings.TrimSpace(lines[i+1])
	}
	return out
}
