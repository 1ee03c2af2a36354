package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
)

// demoConfig is the demo's room: small enough that a second browser window
// already waits.
const demoConfig = `listen: %s
admin:
  listen: %s
  token: demo
store:
  embedded:
    path: %s
rooms:
  - id: shop
    name: Seal Brewing demo shop
    origin: %s
    routes:
      - path: /
    total_active_users: %d
    new_users_per_minute: 60
    session_duration: 20s
    refresh_interval: 5s
    json_response_enabled: true
`

func (m *Main) demo(ctx context.Context, args []string) error {
	fs := m.flags("demo", "demo [--listen ADDR] [--visitors N]")
	listen := fs.String("listen", "127.0.0.1:8080", "the waiting room's address")
	adminAddr := fs.String("admin", "127.0.0.1:9090", "the admin listener's address")
	visitors := fs.Int("visitors", 0, "synthetic visitors who come and go, so the line moves by itself")
	data := fs.String("data", "", "the store's directory (default: a temporary one, removed on exit)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *visitors < 0 || *visitors > 10000 {
		return fmt.Errorf("--visitors: must be between 0 and 10000, got %d", *visitors)
	}
	if *data == "" {
		dir, err := os.MkdirTemp("", "usher-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*data = dir
	}
	log := m.logger()

	// The sample shop on a free loopback port.
	shopLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("sample shop: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		_ = server.Serve(ctx, shopLn, bench.NewOrigin("Seal Brewing"), log.With("listener", "shop"))
	})
	shopURL := "http://" + shopLn.Addr().String()

	capacity := 1 + *visitors/5
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf(demoConfig, *listen, *adminAddr, *data, shopURL, capacity)))
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	// The advice usher gives on a config is for the operator's own: the
	// demo's room, on this machine, needs none (no client limit: its
	// synthetic visitors all come from one address). Any other warning,
	// such as one a change at runtime brings, is still logged.
	log = slog.New(demoHandler{Handler: log.Handler(), known: knownWarnings(cfg)})
	inner := *m
	inner.Ready = func(public, admin string) {
		base := "http://" + public
		fmt.Fprintf(m.Stdout, `
usher demo is running: a sample shop behind a waiting room for %d visitor(s) at a time.

  The shop, through usher:   %s/
  Open it in a second browser (or a private window): you wait in line,
  and the page lets you in by itself when your turn comes.

  Room status (JSON):        %s/__usher/status/shop
  Dashboard:                 http://%s/ (token: demo)
  Admin API:                 curl -H 'Authorization: Bearer demo' http://%s/api/v1/rooms/shop/status
  Metrics:                   curl -H 'Authorization: Bearer demo' http://%s/metrics
  The shop, directly:        %s/

Press Ctrl-C to stop.
`, capacity, base, base, admin, admin, admin, shopURL)
		if *visitors > 0 {
			fmt.Fprintf(m.Stdout, "%d synthetic visitors are coming and going.\n", *visitors)
			for i := range *visitors {
				wg.Go(func() { synthetic(ctx, base+"/", i, log) })
			}
		}
		if m.Ready != nil {
			m.Ready(public, admin)
		}
	}
	defer cancel()
	return inner.run(ctx, cfg, log, "")
}

// synthetic is one demo visitor: it arrives, waits in line honouring the
// refresh interval, browses for a while once in, leaves, and comes back
// later as a new visitor, until ctx is done.
func synthetic(ctx context.Context, url string, n int, log *slog.Logger) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(time.Now().UnixNano())))
	sleep := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
			return true
		}
	}
	if !sleep(time.Duration(rng.Int64N(int64(20 * time.Second)))) {
		return
	}
	for {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		var inSince time.Time
		browse := time.Duration(5+rng.IntN(20)) * time.Second
		for {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			req.Header.Set("Accept", "application/json")
			req.Header.Set("User-Agent", "usher-demo-visitor")
			resp, err := c.Do(req)
			if ctx.Err() != nil {
				return
			}
			wait := 5 * time.Second
			if err != nil {
				log.Debug("demo visitor", "err", err)
			} else {
				if resp.Header.Get("X-Bench-Origin") != "" && inSince.IsZero() {
					inSince = time.Now()
				}
				var page struct {
					Room struct {
						Refresh int `json:"refreshIntervalSeconds"`
					} `json:"usherWaitingRoom"`
				}
				if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&page) == nil && page.Room.Refresh > 0 {
					wait = time.Duration(page.Room.Refresh) * time.Second
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			if !inSince.IsZero() {
				if time.Since(inSince) > browse {
					break
				}
				wait = time.Duration(1+rng.IntN(4)) * time.Second
			}
			if !sleep(wait) {
				return
			}
		}
		if !sleep(time.Duration(10+rng.IntN(30)) * time.Second) {
			return
		}
	}
}

// knownWarnings are the messages usher logs for cfg's warnings.
func knownWarnings(cfg *config.Config) map[string]bool {
	known := map[string]bool{}
	for _, w := range cfg.Warnings() {
		known["config: "+w] = true
	}
	return known
}

// demoHandler drops the warnings the demo's own config is known to give.
type demoHandler struct {
	slog.Handler
	known map[string]bool
}

func (h demoHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && h.known[r.Message] {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h demoHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return demoHandler{Handler: h.Handler.WithAttrs(attrs), known: h.known}
}

func (h demoHandler) WithGroup(name string) slog.Handler {
	return demoHandler{Handler: h.Handler.WithGroup(name), known: h.known}
}
