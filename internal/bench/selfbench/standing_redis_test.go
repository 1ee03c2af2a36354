package selfbench

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestParseShardInfo: a master's scripts are its calls, every command but
// the bench's own INFO its commands (those its scripts ran included), its
// CPU the user and system seconds, its memory used_memory.
func TestParseShardInfo(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_evalsha:calls=120,usec=2000,usec_per_call=16.67,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha_ro:calls=3,usec=30,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_eval:calls=2,usec=30,usec_per_call=15.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_hset:calls=900,usec=800,usec_per_call=0.89,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_info:calls=7,usec=70,usec_per_call=10.00,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_cluster|slots:calls=4,usec=8,usec_per_call=2.00,rejected_calls=0,failed_calls=0\r\n" +
		"\r\n# CPU\r\nused_cpu_sys:1.250000\r\nused_cpu_user:2.500000\r\nused_cpu_sys_children:9.000000\r\n" +
		"\r\n# Memory\r\nused_memory:2097152\r\nused_memory_human:2.00M\r\nused_memory_rss:9999999\r\n"
	s := parseShardInfo(info)
	if s.calls != 125 || s.commands != 1029 {
		t.Errorf("calls %d, commands %d: want 125 scripts, 1029 commands (INFO left out)", s.calls, s.commands)
	}
	if math.Abs(s.cpuS-3.75) > 1e-9 || s.memory != 2097152 {
		t.Errorf("cpu %v s, memory %v: want 3.75 s (children's left out), 2097152", s.cpuS, s.memory)
	}
	m := &redisMeter{addrs: []string{"a:1", "b:2"}}
	before := []shardSample{{calls: 100, commands: 1000, cpuS: 1}, {calls: 0, commands: 10, cpuS: 2}}
	after := []shardSample{{calls: 300, commands: 3000, cpuS: 1.5, memory: 3 << 20}, {calls: 2, commands: 30, cpuS: 2}}
	loads, calls, commands := m.shardLoads(before, after, 2*time.Second)
	if calls != 202 || commands != 2020 || len(loads) != 2 {
		t.Fatalf("calls %d, commands %d, %d loads", calls, commands, len(loads))
	}
	if l := loads[0]; l.Addr != "a:1" || l.CallsPerS != 100 || l.CommandsPerS != 1000 || l.CPUPerS != 0.25 || l.UsedMemoryMB != 3 {
		t.Errorf("first shard %+v", l)
	}
}

// TestParseClusterMasters: the masters serving slots, not those failing,
// not replicas, not a master without slots; a node listed without a host
// is the seed's.
func TestParseClusterMasters(t *testing.T) {
	nodes := "07c3 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n" +
		"67ed 127.0.0.1:7002@17002 master - 0 1426238316232 2 connected 5461-10922\n" +
		"292f :7003@17003 master - 0 1426238318243 3 connected 10923-16383\n" +
		"6ec2 127.0.0.1:7004@17004 slave 07c3 0 1426238317741 1 connected\n" +
		"824f 127.0.0.1:7005@17005 master,fail - 1426238316232 0 5 disconnected 100-200\n" +
		"e7d1 127.0.0.1:7006@17006 master - 0 1426238316232 6 connected\n"
	got := parseClusterMasters(nodes, "10.0.0.9:7001")
	if want := []string{"127.0.0.1:7001", "127.0.0.1:7002", "10.0.0.9:7003"}; !slices.Equal(got, want) {
		t.Errorf("masters %q, want %q", got, want)
	}
}

// TestStandingSummaryRedis: on Redis the summary gives each step's calls
// a check-in, the nodes' memory and each master's load; on the embedded
// store it says nothing of Redis.
func TestStandingSummaryRedis(t *testing.T) {
	r := &StandingResult{Scenario: "standing-room", Store: "redis-cluster", Nodes: 3, RefreshS: 20, MaxRefreshS: 120, BoundMs: 50,
		MaxWaiters: 100000, Steps: []StandingStep{{Waiters: 100000, CheckInsPerS: 900, FixedRPS: 5000, RedisCallsPerCheckIn: 0.042,
			RedisCommandsPerCheckIn: 1.5, UsherCPUus: 210, RSSPerNodeMB: []float64{40, 41, 39},
			RedisShards: []ShardLoad{{Addr: "127.0.0.1:7001", CallsPerS: 38, CommandsPerS: 1350, CPUPerS: 0.12, UsedMemoryMB: 80}, {Addr: "127.0.0.1:7002"}, {Addr: "127.0.0.1:7003"}}}}}
	var b strings.Builder
	WriteSummary(&b, r)
	got := b.String()
	for _, want := range []string{"On a Redis Cluster of 3 masters, 3 usher nodes sharing it:", "100,000 waiters: 0.042 Redis calls a check-in (1.5 commands",
		"usher 210.0us a check-in over the nodes, 40/41/39 MB each", "127.0.0.1:7001 38 calls/s (1,350 commands/s), 12% of a core, 80 MB", "127.0.0.1:7003 0 calls/s"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	r.Store, r.Nodes = "embedded", 1
	b.Reset()
	WriteSummary(&b, r)
	if strings.Contains(b.String(), "Redis") {
		t.Errorf("embedded store's summary speaks of Redis:\n%s", b.String())
	}
	r.Stopped = "1,000,000 waiters: the generator had answers for 5 of 900,000 newcomers a minute after they arrived"
	if ws := Warnings(r); len(ws) != 1 || !strings.Contains(ws[0], "stopped before the last step: 1,000,000 waiters") {
		t.Errorf("warnings %q", ws)
	}
}

// TestSpreadOf: the busiest master's share of the calls and of the CPU,
// each against the even share: 1/3 over three masters evenly loaded, 1
// when one does it all, 0 for what none did.
func TestSpreadOf(t *testing.T) {
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	if s := spreadOf(nil); s != nil {
		t.Errorf("no master: %+v, want nil", s)
	}
	even := spreadOf([]ShardLoad{{CallsPerS: 30, CPUPerS: 0.1}, {CallsPerS: 30, CPUPerS: 0.1}, {CallsPerS: 30, CPUPerS: 0.1}})
	if even.Masters != 3 || !near(even.BusiestCallsShare, 1.0/3) || !near(even.BusiestCPUShare, 1.0/3) || !near(even.EvenShare, 1.0/3) {
		t.Errorf("three even masters: %+v, want every share 1/3", even)
	}
	one := spreadOf([]ShardLoad{{CallsPerS: 0, CPUPerS: 0.01}, {CallsPerS: 90, CPUPerS: 0.29}, {CallsPerS: 10, CPUPerS: 0}})
	if !near(one.BusiestCallsShare, 0.9) || !near(one.BusiestCPUShare, 0.29/0.30) || !near(one.EvenShare, 1.0/3) {
		t.Errorf("one busy master: %+v, want calls 0.9, CPU 0.967", one)
	}
	idle := spreadOf([]ShardLoad{{}, {}})
	if idle.BusiestCallsShare != 0 || idle.BusiestCPUShare != 0 || idle.EvenShare != 0.5 {
		t.Errorf("idle masters: %+v, want no shares, even 0.5", idle)
	}
}

// TestStandingSummarySpread: on a cluster, the summary says the room's
// shards and, step by step, the busiest master's shares; on one server
// it says no spread.
func TestStandingSummarySpread(t *testing.T) {
	step := StandingStep{Waiters: 20000, CheckInsPerS: 700, RedisCallsPerCheckIn: 0.05,
		RedisShards: []ShardLoad{{Addr: "a:1", CallsPerS: 20, CPUPerS: 0.1}, {Addr: "b:2", CallsPerS: 10, CPUPerS: 0.05}, {Addr: "c:3", CallsPerS: 5, CPUPerS: 0.05}}}
	step.RedisSpread = spreadOf(step.RedisShards)
	r := &StandingResult{Store: "redis-cluster", Nodes: 3, Shards: 3, Steps: []StandingStep{step}}
	var b strings.Builder
	writeStandingRedis(&b, r)
	for _, want := range []string{
		"On a Redis Cluster of 3 masters, 3 usher nodes sharing it, the room on a front and 2 back shards (shards: 3):",
		"Spread: the busiest master took 57% of the calls and 50% of the CPU (33% each is even).",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	step.RedisShards = step.RedisShards[:1]
	step.RedisSpread = spreadOf(step.RedisShards)
	writeStandingRedis(&b, &StandingResult{Store: "redis", Nodes: 1, Shards: 1, Steps: []StandingStep{step}})
	if got := b.String(); strings.Contains(got, "Spread") || strings.Contains(got, "shards:") {
		t.Errorf("one server, one shard: summary speaks of a spread or shards:\n%s", got)
	}
}
