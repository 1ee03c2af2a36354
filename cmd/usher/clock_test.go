package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// skewed reads the clock of a node whose clock is behind the server's by
// skew (its readings' offsets are skew larger).
type skewed struct {
	*redis.Store
	skew time.Duration
}

func (s skewed) Clock(ctx context.Context, publish *redis.ClockReading) (redis.ClockReading, []redis.ClockReading, error) {
	own, all, err := s.Store.Clock(ctx, publish)
	own.Offset += s.skew
	return own, all, err
}

// TestClockWatchWarns: two nodes on one Redis, one of whose clocks is
// 400 ms behind. With clock_slack 250ms both see the nodes up to about
// 400 ms apart and warn, naming clock_slack; when the slack is 1s
// neither warns; a node alone never does, whatever its offset.
func TestClockWatchWarns(t *testing.T) {
	rd := redistest.StartServer(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		slack time.Duration
		alone bool
		warn  bool
	}{
		{"slack 250ms", 250 * time.Millisecond, false, true},
		{"slack 1s", time.Second, false, false},
		{"alone", 0, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := mustOpenRedis(t, rd.Addr(), "clock-"+strings.ReplaceAll(c.name, " ", "-"))
			var logs [2]bytes.Buffer
			w := [2]*clockWatch{
				{store: st, node: "a", slack: c.slack, log: slog.New(slog.NewTextHandler(&logs[0], nil))},
				{store: skewed{st, 400 * time.Millisecond}, node: "b", slack: c.slack, log: slog.New(slog.NewTextHandler(&logs[1], nil))},
			}
			n, skew := 2, [2]time.Duration{0, 400 * time.Millisecond}
			if c.alone {
				n, skew[0] = 1, 400*time.Millisecond
				w[0].store = skewed{st, skew[0]}
			}
			for range 2 { // the first round publishes; the second sees all
				for i := range n {
					w[i].round(ctx)
				}
			}
			for i := range n {
				own, spread, nodes, ok := w[i].figures()
				if !ok || nodes != n {
					t.Fatalf("node %d: %d nodes seen (ok %v), want %d", i, nodes, ok, n)
				}
				if want := 400 * time.Millisecond; n == 2 && (spread < want || spread > want+100*time.Millisecond) {
					t.Errorf("node %d: spread %v, want about %v", i, spread, want)
				}
				if n == 1 && spread != 0 {
					t.Errorf("alone: spread %v, want 0", spread)
				}
				if own.Lo() > skew[i] || own.Hi() < skew[i] {
					t.Errorf("node %d: offset %v ± %v", i, own.Offset, own.Error)
				}
				warned := strings.Contains(logs[i].String(), "clock_slack")
				if warned != c.warn {
					t.Errorf("node %d: warned %v, want %v: %s", i, warned, c.warn, logs[i].String())
				}
			}
		})
	}
}

func mustOpenRedis(t *testing.T, addr, prefix string) *redis.Store {
	t.Helper()
	st, err := redis.Open(context.Background(), redis.Options{Addrs: []string{addr}, KeyPrefix: prefix, Timeout: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
