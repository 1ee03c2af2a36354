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
