package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestClockReadsTheServersClock: a node on the server's own host reads its
// clock against the server's within the reading's bounds (the two share one
// clock, so zero is inside them), and the call publishes the node's reading
// for the others: a node whose clock is 300 ms behind the server's is seen
// by another node as 300 ms from it, give or take both readings' errors.
func TestClockReadsTheServersClock(t *testing.T) {
	rd := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{rd.Addr()}, KeyPrefix: prefix(t)})
	ctx := context.Background()
	own, all, err := s.Clock(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Errorf("nothing published yet, got %v", all)
	}
	if own.Lo() > 0 || own.Hi() < 0 || own.Error <= 0 || own.Error > time.Second {
		t.Errorf("one host, one clock: offset %v ± %v does not hold 0", own.Offset, own.Error)
	}
	behind := redis.ClockReading{Node: "b", Offset: 300 * time.Millisecond, Error: 2 * time.Millisecond}
	if _, _, err := s.Clock(ctx, &behind); err != nil {
		t.Fatal(err)
	}
	mine := redis.ClockReading{Node: "a", Offset: own.Offset, Error: own.Error}
	own, all, err = s.Clock(ctx, &mine)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("published readings %v, want a's and b's", all)
	}
	for _, r := range all {
		if r.Node == "b" && r != behind {
			t.Errorf("b's reading came back as %+v, want %+v", r, behind)
		}
	}
	own.Node = "a"
	spread, _ := redis.ClockApart(own, all)
	if lo, hi := 302*time.Millisecond, 302*time.Millisecond+2*own.Error; spread < lo || spread > hi {
		t.Errorf("spread %v, want from %v to %v (b's 300 ms, both errors)", spread, lo, hi)
	}
}

// TestClockSpread: the most and the least two nodes' clocks can be apart,
// from their readings' bounds; a node's own latest reading stands for its
// published one, and one node alone has no spread.
func TestClockSpread(t *testing.T) {
	ms := time.Millisecond
	r := func(node string, off, e time.Duration) redis.ClockReading {
		return redis.ClockReading{Node: node, Offset: off, Error: e}
	}
	for _, c := range []struct {
		name        string
		own         redis.ClockReading
		pub         []redis.ClockReading
		most, least time.Duration
	}{
		{"alone", r("a", 40*ms, ms), nil, 0, 0},
		{"alone, published", r("a", 40*ms, ms), []redis.ClockReading{r("a", 90*ms, ms)}, 0, 0},
		{"two", r("a", 40*ms, ms), []redis.ClockReading{r("a", 90*ms, ms), r("b", -10*ms, 2*ms)}, 53 * ms, 47 * ms},
		{"three", r("a", 0, ms), []redis.ClockReading{r("b", 5*ms, ms), r("c", -5*ms, ms)}, 12 * ms, 8 * ms},
		{"bounds overlap", r("a", 0, 3*ms), []redis.ClockReading{r("b", 2*ms, ms)}, 6 * ms, 0},
	} {
		most, least := redis.ClockApart(c.own, c.pub)
		if most != c.most || least != c.least {
			t.Errorf("%s: apart %v to %v, want %v to %v", c.name, least, most, c.least, c.most)
		}
	}
}

// TestClockCluster: on a Redis Cluster two nodes, each with its own
// client, read the clock of the shard that holds the clocks key and see
// each other's readings.
func TestClockCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	open := func() *redis.Store {
		return mustOpen(t, redis.Options{Addrs: c.Addrs(), Cluster: true, KeyPrefix: prefix(t)})
	}
	a, b := open(), open()
	own, _, err := a.Clock(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if own.Lo() > 0 || own.Hi() < 0 {
		t.Errorf("one host, one clock: offset %v ± %v does not hold 0", own.Offset, own.Error)
	}
	own.Node = "a"
	if _, _, err := a.Clock(ctx, &own); err != nil {
		t.Fatal(err)
	}
	mine, all, err := b.Clock(ctx, &redis.ClockReading{Node: "b", Error: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 {
		t.Fatalf("b sees %v, want a's and its own reading", all)
	}
	mine.Node = "b"
	if sp, _ := redis.ClockApart(mine, all); sp > 100*time.Millisecond {
		t.Errorf("two nodes on one host %v apart", sp)
	}
}
