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
// 400 ms apart, warn, naming clock_slack, and put a slack in force that
// covers the difference (the spread and a quarter); when the slack is 1s
// neither warns and the slack stays 1s; a node alone never warns, whatever
// its offset. When the clocks come back together, the slack goes back to
// clock_slack.
func TestClockWatchWarns(t *testing.T) {
	rd := redistest.StartServer(t)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		slack time.Duration
		alone bool
		warn  bool
		skew  time.Duration
	}{
		{"slack 250ms", 250 * time.Millisecond, false, true, 400 * time.Millisecond},
		{"slack 1s", time.Second, false, false, 400 * time.Millisecond},
		{"alone", 0, true, false, 400 * time.Millisecond},
		// One host, one clock: the readings' errors alone prove nothing.
		{"one clock, slack 0s", 0, false, false, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := mustOpenRedis(t, rd.Addr(), "clock-"+strings.ReplaceAll(c.name, " ", "-"))
			var logs [2]bytes.Buffer
			inForce := [2]time.Duration{c.slack, c.slack} // as the engines start
			w := [2]*clockWatch{
				newClockWatch(st, c.slack, func(d time.Duration) { inForce[0] = d }, slog.New(slog.NewTextHandler(&logs[0], nil))),
				newClockWatch(skewed{st, c.skew}, c.slack, func(d time.Duration) { inForce[1] = d }, slog.New(slog.NewTextHandler(&logs[1], nil))),
			}
			w[0].node, w[1].node = "a", "b"
			n, skew := 2, [2]time.Duration{0, c.skew}
			if c.alone {
				n, skew[0] = 1, c.skew
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
				if want := c.skew; n == 2 && (spread < want || spread > want+100*time.Millisecond) {
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
				switch {
				case c.warn && (inForce[i] < spread+spread/4 || inForce[i] > spread+spread/4+time.Millisecond):
					t.Errorf("node %d: slack in force %v for clocks %v apart, want %v", i, inForce[i], spread, raised(spread))
				case !c.warn && inForce[i] != c.slack:
					t.Errorf("node %d: slack in force %v, want clock_slack %v", i, inForce[i], c.slack)
				}
			}
			if !c.warn {
				return
			}
			// b's clock is set right: both go back to clock_slack.
			w[1].store = st
			for range 2 {
				for i := range n {
					w[i].round(ctx)
				}
			}
			for i := range n {
				if inForce[i] != c.slack {
					t.Errorf("node %d: clocks together again, slack in force %v, want %v", i, inForce[i], c.slack)
				}
				if !strings.Contains(logs[i].String(), "within store.redis.clock_slack again") {
					t.Errorf("node %d: no notice that the clocks are together again: %s", i, logs[i].String())
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
