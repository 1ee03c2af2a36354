package selfbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/ticket"
	"github.com/valkey-io/valkey-go"
)

// ShardLoad is one Redis master's load during a standing-room step, from
// its own INFO: how the room's load spreads over a cluster's shards.
type ShardLoad struct {
	Addr string `json:"addr"`
	// CallsPerS is the calls a second the master answered: its scripts
	// (INFO commandstats: EVALSHA, EVAL, FCALL and their read-only
	// kinds), each a call of usher's store (an admission or a check-in
	// near the front, a batch of far-back moves, a read of a room's view).
	CallsPerS float64 `json:"calls_per_s"`
	// CommandsPerS is every command a second the master ran, those its
	// scripts ran included (INFO commandstats counts both), but the
	// bench's own INFO.
	CommandsPerS float64 `json:"commands_per_s"`
	// CPUPerS is the master's CPU time a second (INFO cpu: used_cpu_user
	// and used_cpu_sys): the share of a core it used, 1 being a whole one.
	CPUPerS float64 `json:"cpu_s_per_s"`
	// UsedMemoryMB is the memory the master held at the step's end (INFO
	// memory: used_memory).
	UsedMemoryMB float64 `json:"used_memory_mb"`
}

// ShardSpread is how evenly the Redis masters shared a step's load: the
// busiest master's share of all the masters' calls, and the busiest's
// share of their CPU (EvenShare, 1/Masters, when it is perfectly even; 1
// when one master did it all).
type ShardSpread struct {
	Masters           int     `json:"masters"`
	BusiestCallsShare float64 `json:"busiest_calls_share"`
	BusiestCPUShare   float64 `json:"busiest_cpu_share"`
	EvenShare         float64 `json:"even_share"`
}

// spreadOf returns how evenly loads shares its calls and CPU; nil with no
// master. A share is 0 when the masters had none of it.
func spreadOf(loads []ShardLoad) *ShardSpread {
	if len(loads) == 0 {
		return nil
	}
	var calls, cpu, mostCalls, mostCPU float64
	for _, l := range loads {
		calls, cpu = calls+l.CallsPerS, cpu+l.CPUPerS
		mostCalls, mostCPU = max(mostCalls, l.CallsPerS), max(mostCPU, l.CPUPerS)
	}
	s := &ShardSpread{Masters: len(loads), EvenShare: 1 / float64(len(loads))}
	if calls > 0 {
		s.BusiestCallsShare = mostCalls / calls
	}
	if cpu > 0 {
		s.BusiestCPUShare = mostCPU / cpu
	}
	return s
}

// startStandingNodes starts f.Nodes usher processes on the Redis store at
// f.Redis for the room in rooms (with the origin at originURL), under one
// key prefix of this run's own and sealing tickets with one key, so that
// each opens the others' tickets, as nodes behind a load balancer do.
func startStandingNodes(ctx context.Context, f *Config, dir, rooms, originURL string) ([]*childTarget, error) {
	k, err := ticket.GenerateKey("bench")
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "key")
	if err := os.WriteFile(keyFile, []byte(k.ID+" "+ticket.EncodeSecret(k.Secret)+"\n"), 0o600); err != nil {
		return nil, err
	}
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	prefix := "usher-bench-" + hex.EncodeToString(tag[:])
	var nodes []*childTarget
	for i := range f.Nodes {
		args := []string{"usher", "--dir", filepath.Join(dir, fmt.Sprintf("data%d", i+1)), "--rooms", rooms, "--origin", originURL,
			"--redis", f.Redis, "--key-prefix", prefix, "--key-file", keyFile, "--node", strconv.Itoa(i + 1)}
		if f.RedisCluster {
			args = append(args, "--redis-cluster")
		}
		n, err := startChild(ctx, args...)
		if err != nil {
			for _, m := range nodes {
				m.stop()
			}
			return nil, fmt.Errorf("usher node %d on redis: %w", i+1, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

// redisMeter reads the load of every master of the Redis store the nodes
// share, from the servers' own INFO.
type redisMeter struct {
	addrs   []string
	clients []valkey.Client
}

// shardSample is a master's counters at one moment.
type shardSample struct {
	calls    int64 // scripts
	commands int64 // every command but INFO
	cpuS     float64
	memory   float64 // bytes
}

// newRedisMeter connects to every master of the store at addrs
// (comma-separated; a cluster's seed nodes with cluster): the one server,
// or the masters serving slots as the first seed that answers lists them.
func newRedisMeter(ctx context.Context, addrs string, cluster bool) (*redisMeter, error) {
	m := &redisMeter{}
	seeds := strings.Split(addrs, ",")
	if !cluster {
		m.addrs = seeds
	} else {
		var err error
		for _, seed := range seeds {
			if m.addrs, err = clusterMasters(ctx, seed); err == nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for _, a := range m.addrs {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{a}, ForceSingleClient: true, DisableCache: true})
		if err != nil {
			m.close()
			return nil, fmt.Errorf("redis %s: %w", a, err)
		}
		m.clients = append(m.clients, c)
	}
	return m, nil
}

// clusterMasters returns the addresses of the masters serving slots, as
// the node at seed lists them (CLUSTER NODES).
func clusterMasters(ctx context.Context, seed string) ([]string, error) {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{seed}, ForceSingleClient: true, DisableCache: true})
	if err != nil {
		return nil, fmt.Errorf("redis %s: %w", seed, err)
	}
	defer c.Close()
	nodes, err := c.Do(ctx, c.B().ClusterNodes().Build()).ToString()
	if err != nil {
		return nil, fmt.Errorf("redis %s: CLUSTER NODES: %w", seed, err)
	}
	masters := parseClusterMasters(nodes, seed)
	if len(masters) == 0 {
		return nil, fmt.Errorf("redis %s: no master serves slots", seed)
	}
	return masters, nil
}

// parseClusterMasters reads CLUSTER NODES: the addresses of the masters
// not failing that serve slots, the seed's host for a node listed without
// one.
func parseClusterMasters(nodes, seed string) []string {
	var out []string
	for _, line := range strings.Split(nodes, "\n") {
		f := strings.Fields(line)
		if len(f) < 9 || !strings.Contains(f[2], "master") || strings.Contains(f[2], "fail") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		if host, port, ok := strings.Cut(addr, ":"); ok && host == "" {
			seedHost, _, _ := strings.Cut(seed, ":")
			addr = seedHost + ":" + port
		}
		out = append(out, addr)
	}
	return out
}

// read returns every master's counters now, in m.addrs's order.
func (m *redisMeter) read(ctx context.Context) ([]shardSample, error) {
	out := make([]shardSample, len(m.clients))
	for i, c := range m.clients {
		info, err := c.Do(ctx, c.B().Info().Section("commandstats", "cpu", "memory").Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("redis %s: INFO: %w", m.addrs[i], err)
		}
		out[i] = parseShardInfo(info)
	}
	return out, nil
}

// parseShardInfo reads INFO commandstats, cpu and memory: the scripts
// called, the commands run (but INFO, which only the bench sends), the CPU
// seconds used, and the memory held. Commandstats counts the commands a
// script runs as well as those clients send, and cannot tell them apart:
// usher's store sends its decisions, batches and view reads as scripts, so
// the scripts are its calls; its few plain commands (a health or governor
// read) are among the commands.
func parseShardInfo(info string) shardSample {
	var s shardSample
	for _, line := range strings.Split(info, "\n") {
		line = strings.TrimSpace(line)
		name, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(name, "cmdstat_"):
			if name == "cmdstat_info" {
				continue
			}
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			n, _ := strconv.ParseInt(calls, 10, 64)
			s.commands += n
			switch strings.TrimPrefix(name, "cmdstat_") {
			case "evalsha", "eval", "evalsha_ro", "eval_ro", "fcall", "fcall_ro":
				s.calls += n
			}
		case name == "used_cpu_user" || name == "used_cpu_sys":
			x, _ := strconv.ParseFloat(v, 64)
			s.cpuS += x
		case name == "used_memory":
			x, _ := strconv.ParseFloat(v, 64)
			s.memory = x
		}
	}
	return s
}

// shardLoads are the masters' loads between two readings d apart, and the
// calls and commands they answered in all.
func (m *redisMeter) shardLoads(before, after []shardSample, d time.Duration) (loads []ShardLoad, calls, commands int64) {
	for i := range min(len(before), len(after)) {
		dc, dm := after[i].calls-before[i].calls, after[i].commands-before[i].commands
		calls, commands = calls+dc, commands+dm
		loads = append(loads, ShardLoad{Addr: m.addrs[i], CallsPerS: float64(dc) / d.Seconds(), CommandsPerS: float64(dm) / d.Seconds(),
			CPUPerS: (after[i].cpuS - before[i].cpuS) / d.Seconds(), UsedMemoryMB: after[i].memory / (1 << 20)})
	}
	return loads, calls, commands
}

func (m *redisMeter) close() {
	for _, c := range m.clients {
		c.Close()
	}
}
