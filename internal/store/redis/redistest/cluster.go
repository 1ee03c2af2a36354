package redistest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Cluster is a Redis Cluster of masters without replicas.
type Cluster struct {
	// Servers are the cluster's nodes.
	Servers []*Server
}

// StartCluster starts masters redis-server nodes in cluster mode, joins
// them into one cluster (redis-cli --cluster create) and waits until every
// node reports cluster_state:ok. The nodes stop when the test ends.
func StartCluster(t testing.TB, masters int) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found: install it (make test installs it as root)")
	}
	c := &Cluster{}
	for range masters {
		s := startServer(t, func(int) []string {
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(freePort(t)),
				"--cluster-node-timeout", "5000",
			}
		})
		c.Servers = append(c.Servers, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Servers {
		for {
			info, err := do(s.Addr(), "CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(masters)+"\r") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not ready: %s", s.Addr(), info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// Addrs returns the nodes' host:port addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Servers {
		out = append(out, s.Addr())
	}
	return out
}

// StartClusterReplicas starts a Redis Cluster of masters masters with one
// replica each (redis-cli --cluster create --cluster-replicas 1) and a
// cluster-node-timeout of nodeTimeout, after which a master that does not
// answer is failed over to its replica. It waits until every node
// reports cluster_state:ok and knows every other, and every replica is in
// sync. The nodes stop when the test ends.
func StartClusterReplicas(t testing.TB, masters int, nodeTimeout time.Duration) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not found: install it (make test installs it as root)")
	}
	c := &Cluster{}
	for range 2 * masters {
		s := startServer(t, func(int) []string {
			return []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(freePort(t)),
				"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10),
			}
		})
		c.Servers = append(c.Servers, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Servers {
		for {
			info, err := do(s.Addr(), "CLUSTER", "INFO")
			ok := err == nil && strings.Contains(info, "cluster_state:ok") &&
				strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(2*masters)+"\r")
			if ok {
				repl, err := do(s.Addr(), "INFO", "replication")
				ok = err == nil && (strings.Contains(repl, "role:master") || strings.Contains(repl, "master_link_status:up"))
				info += repl
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: cluster node %s not ready: %s", s.Addr(), info)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// MasterOf returns the running node that serves key's slot as a master
// by its own account (its own line of CLUSTER NODES: what the others say
// of it may lag), or nil when none does.
func (c *Cluster) MasterOf(key string) *Server {
	for _, s := range c.Servers {
		slot, err := do(s.Addr(), "CLUSTER", "KEYSLOT", key)
		if err != nil {
			continue
		}
		nodes, err := do(s.Addr(), "CLUSTER", "NODES")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(nodes, "\n") {
			if strings.Contains(line, "myself") && strings.Contains(line, "master") && servesSlot(line, slot) {
				return s
			}
		}
	}
	return nil
}

// servesSlot reports whether a line of CLUSTER NODES lists slot among its
// ranges.
func servesSlot(line, slot string) bool {
	n, err := strconv.Atoi(slot)
	if err != nil {
		return false
	}
	fields := strings.Fields(line)
	for _, f := range fields[min(8, len(fields)):] {
		lo, hi, found := strings.Cut(f, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if !found {
			b, err2 = a, err1
		}
		if err1 == nil && err2 == nil && a <= n && n <= b {
			return true
		}
	}
	return false
}

// Healthy reports whether every running node reports cluster_state:ok
// and exactly masters of them are masters serving slots (after a
// failover: the promoted replica in the dead master's place).
func (c *Cluster) Healthy(masters int) bool {
	serving := 0
	for _, s := range c.Servers {
		if !s.running() {
			continue
		}
		info, err := do(s.Addr(), "CLUSTER", "INFO")
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
		nodes, err := do(s.Addr(), "CLUSTER", "NODES")
		if err != nil {
			return false
		}
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if strings.Contains(line, "myself") && strings.Contains(line, "master") && len(f) > 8 {
				serving++
			}
		}
	}
	return serving == masters
}
