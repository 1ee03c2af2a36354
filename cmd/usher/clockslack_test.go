package main

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestOpenStoreClockSlack: store.redis.clock_slack is how long the engine
// keeps sessions' counts past their end (its CellSlack), 250ms when unset.
func TestOpenStoreClockSlack(t *testing.T) {
	rd := redistest.StartServer(t)
	secs := func(n int) *time.Duration { d := time.Duration(n) * time.Second; return &d }
	ms := func(n int) *time.Duration { d := time.Duration(n) * time.Millisecond; return &d }
	for _, c := range []struct {
		name  string
		slack *time.Duration
		want  time.Duration
	}{
		{"unset", nil, 250 * time.Millisecond},
		{"a tenth", ms(100), 100 * time.Millisecond},
		{"one clock", secs(0), 0},
		{"three seconds", secs(3), 3 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := &config.Config{}
			cfg.Store.Redis = &config.Redis{Addrs: []string{rd.Addr()}, KeyPrefix: "slack-test", ClockSlack: c.slack}
			s, opts, err := openStore(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if opts.CellSlack != c.want {
				t.Errorf("CellSlack = %v, want %v", opts.CellSlack, c.want)
			}
		})
	}
}
