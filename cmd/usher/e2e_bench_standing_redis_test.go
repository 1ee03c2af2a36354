package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestE2EBenchStandingRedis: usher bench --scenario standing-room on a
// 3-master Redis Cluster with three usher nodes, each a process of its
// own, the crowd's connections spread over them. A small line forms (200
// waiters near the front), then 20,000 more join behind it: at that step
// most check-ins are far back in the line, answered from each node's view
// of the room and moved in batches, so the masters answer fewer than 0.2
// calls a check-in (by their own count of scripts); every check-in is
// answered. A store that makes a call of every check-in measures about one
// (with FarBack.Off, 1.00 here). The step reports each master's load and each
// node's memory.
func TestE2EBenchStandingRedis(t *testing.T) {
	cluster := redistest.StartCluster(t, 3)
	code, out, errs := runMain(t, "bench", "--self", "--scenario", "standing-room", "--redis", strings.Join(cluster.Addrs(), ","),
		"--redis-cluster", "--nodes", "3", "--refresh", "10s", "--max-refresh", "30s", "--steps", "200,20000", "--bound", "2s", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var r StandingResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.Store != "redis-cluster" || r.Nodes != 3 || r.Stopped != "" {
		t.Fatalf("store %q, %d nodes, stopped %q: want redis-cluster, 3, not stopped", r.Store, r.Nodes, r.Stopped)
	}
	if len(r.Steps) != 2 || r.Steps[1].Waiters != 20000 {
		t.Fatalf("steps %+v, want 200 and 20,000 waiters", r.Steps)
	}
	for _, s := range r.Steps {
		t.Logf("%d waiters: %.0f check-ins/s, p99 %.1f ms, late p99 %.1f ms, %.3f Redis calls (%.2f commands) a check-in, usher %.0f us a check-in, RSS %v MB, shards %+v",
			s.Waiters, s.CheckInsPerS, s.P99ms, s.LateP99ms, s.RedisCallsPerCheckIn, s.RedisCommandsPerCheckIn, s.UsherCPUus, s.RSSPerNodeMB, s.RedisShards)
		if s.Errors != 0 {
			t.Errorf("%d waiters: %d check-ins failed, want every one answered", s.Waiters, s.Errors)
		}
		if len(s.RedisShards) != 3 || len(s.RSSPerNodeMB) != 3 || s.UsherCPUus <= 0 {
			t.Fatalf("%d waiters: %d shards, %d nodes' RSS, usher %v us: want 3, 3 and CPU measured", s.Waiters, len(s.RedisShards), len(s.RSSPerNodeMB), s.UsherCPUus)
		}
		// The shards' calls a second add up to the calls a check-in.
		var callsPerS, cpu float64
		for _, sh := range s.RedisShards {
			callsPerS += sh.CallsPerS
			cpu += sh.CPUPerS
			if sh.CommandsPerS < sh.CallsPerS || sh.CPUPerS < 0 || sh.UsedMemoryMB <= 0 {
				t.Errorf("%d waiters: shard %+v", s.Waiters, sh)
			}
		}
		if got := callsPerS / s.CheckInsPerS; s.RedisCallsPerCheckIn <= 0 || math.Abs(got-s.RedisCallsPerCheckIn) > 0.1*s.RedisCallsPerCheckIn {
			t.Errorf("%d waiters: %.3f calls a check-in, the shards' %.0f calls/s over %.0f check-ins/s make %.3f", s.Waiters, s.RedisCallsPerCheckIn, callsPerS, s.CheckInsPerS, got)
		}
		if cpu <= 0 {
			t.Errorf("%d waiters: the masters used no CPU", s.Waiters)
		}
		for _, m := range s.RSSPerNodeMB {
			if m <= 0 || m > s.RSSMB {
				t.Errorf("%d waiters: a node's RSS %v MB, the largest %v", s.Waiters, m, s.RSSMB)
			}
		}
	}
	// Most waiters are far back: each checks in about once in 30 s, the
	// front (the first 200 and the room's margin) more often.
	last := r.Steps[1]
	if low := 0.8 * 20200 / (30*1.1 + 1.2); last.CheckInsPerS < low {
		t.Errorf("20,000 waiters: %.0f check-ins a second, want at least %.0f (the generator fell behind)", last.CheckInsPerS, low)
	}
	if last.RedisCallsPerCheckIn >= 0.2 {
		t.Errorf("20,000 waiters: %.3f Redis calls a check-in, want under 0.2 (far-back check-ins answered from the nodes' views)", last.RedisCallsPerCheckIn)
	}
}
