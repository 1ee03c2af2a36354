package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/ticket"
)

// selfEnv is usher bench --self: a sample origin and usher in front of
// it, on loopback, in this process unless said otherwise (selfOptions);
// with reference proxies for the throughput scenario.
type selfEnv struct {
	origin    *bench.Origin
	originURL string
	usherURL  string
	// usherURLs are every usher node's URL, usherURL first
	// (selfOptions.nodes).
	usherURLs []string
	// tuned and unpooled are the reference proxies to the origin, each in
	// a process of its own (selfOptions.proxies), nil without: an
	// httputil.ReverseProxy with the gate's transport and buffer pool, and
	// the same without the pool.
	tuned, unpooled *childTarget
	// usherProc is usher's process when it runs in its own
	// (selfOptions.separate), nil when it runs in this one.
	usherProc *childTarget
	// originProc is the origin's process (selfOptions.originProc), nil
	// when it runs in this one.
	originProc *childTarget
	// authAddr is usher's private forward-auth listener (host:port) when
	// it runs in its own process, for nginx's recipe; empty otherwise.
	authAddr string
	// redis is usher's store when it runs on Redis (selfOptions.redis),
	// for its call counter; nil on the embedded store.
	redis *redis.Store
	// embeddedURL is a second usher, on the embedded store, with the same
	// rooms and origin (selfOptions.compareEmbedded); empty without.
	embeddedURL string
	// engines are the engines of the usher nodes started in this process,
	// for their counters.
	engines []*admission.Engine
	stop    func()
}

// selfOptions choose the self environment's store.
type selfOptions struct {
	// redis is the address of a Redis server (comma-separated seed nodes
	// with cluster) usher keeps its state in, as a node of a shared store
	// does (activity batched); empty: the embedded store.
	redis   string
	cluster bool
	// compareEmbedded, with redis, also starts a usher on the embedded
	// store, for comparison.
	compareEmbedded bool
	// trusted are usher's trusted_proxies (a proxy on loopback asking
	// forward auth); nil: none.
	trusted []string
	// nodes, with redis, is how many usher nodes share the store (zero:
	// one).
	nodes int
	// clockSlack, with redis, is the nodes' store.redis.clock_slack (nil:
	// its default).
	clockSlack *time.Duration
	// proxies starts the reference proxies (selfEnv.tuned, .unpooled).
	proxies bool
	// separate runs usher in a process of its own (embedded store only),
	// so that its CPU time can be read apart from the load generator's.
	separate bool
	// originProc runs the origin in a process of its own (selfEnv.originProc;
	// the fixed page only), and pin is the CPUs (a taskset list) of every
	// process the environment starts, empty: any (usher bench --external).
	originProc bool
	pin        string
}

// selfConfig is the self environment's usher config: rooms (YAML of the
// rooms list, with %s where the origin URL goes) on the embedded store in
// dir.
func selfConfig(dir, rooms, originURL string) (*config.Config, error) {
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf("listen: 127.0.0.1:0\nstore:\n  embedded:\n    path: %s\nrooms:\n%s",
		dir, strings.ReplaceAll(rooms, "%s", originURL))))
	if err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	return cfg, nil
}

// startSelf starts the environment with rooms (YAML of the rooms list, with
// %s where the origin URL goes), usher on the embedded store.
func (m *Main) startSelf(ctx context.Context, rooms string) (*selfEnv, error) {
	return m.startSelfWith(ctx, rooms, selfOptions{})
}

// startSelfWith starts the environment with rooms and opts.
func (m *Main) startSelfWith(ctx context.Context, rooms string, opts selfOptions) (*selfEnv, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var closers []func() error
	env := &selfEnv{origin: bench.NewOrigin("bench shop")}
	fixed := fixedPage(env.origin)
	quiet := slog.New(slog.DiscardHandler)
	serve := func(h http.Handler) (string, error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		wg.Go(func() { _ = server.Serve(ctx, ln, h, quiet) })
		return "http://" + ln.Addr().String(), nil
	}
	dir, err := os.MkdirTemp("", "usher-bench-")
	if err != nil {
		cancel()
		return nil, err
	}
	env.stop = func() {
		cancel()
		wg.Wait()
		for _, c := range closers {
			_ = c()
		}
		os.RemoveAll(dir)
	}
	fail := func(err error) (*selfEnv, error) {
		env.stop()
		return nil, err
	}
	if opts.originProc {
		if env.originProc, err = startChildOn(ctx, opts.pin, "origin"); err != nil {
			return fail(err)
		}
		closers = append(closers, func() error { env.originProc.stop(); return nil })
		env.originURL = env.originProc.url
	} else if env.originURL, err = serve(fixed); err != nil {
		return fail(err)
	}
	if opts.proxies {
		if env.tuned, err = startChildOn(ctx, opts.pin, "proxy", "--origin", env.originURL); err != nil {
			return fail(err)
		}
		closers = append(closers, func() error { env.tuned.stop(); return nil })
		if env.unpooled, err = startChildOn(ctx, opts.pin, "proxy", "--origin", env.originURL, "--unpooled"); err != nil {
			return fail(err)
		}
		closers = append(closers, func() error { env.unpooled.stop(); return nil })
	}
	if opts.separate && opts.redis == "" {
		roomsFile := filepath.Join(dir, "rooms.yaml")
		if err := os.MkdirAll(filepath.Join(dir, "store"), 0o700); err != nil {
			return fail(err)
		}
		if err := os.WriteFile(roomsFile, []byte(rooms), 0o600); err != nil {
			return fail(err)
		}
		if env.authAddr, err = freeLoopback(); err != nil {
			return fail(err)
		}
		if env.usherProc, err = startChildOn(ctx, opts.pin, "usher", "--dir", filepath.Join(dir, "store"), "--rooms", roomsFile,
			"--origin", env.originURL, "--trusted", strings.Join(opts.trusted, ","), "--forward-auth", env.authAddr); err != nil {
			return fail(err)
		}
		closers = append(closers, func() error { env.usherProc.stop(); return nil })
		env.usherURL = env.usherProc.url
		return env, nil
	}
	cfg, err := selfConfig(dir, rooms, env.originURL)
	if err != nil {
		return fail(err)
	}
	cfg.TrustedProxies = opts.trusted
	if opts.redis == "" {
		ready := make(chan string, 1)
		inner := &Main{Stdout: io.Discard, Stderr: io.Discard, Ready: func(pub, _ string) { ready <- pub }}
		errc := make(chan error, 1)
		wg.Go(func() { errc <- inner.run(ctx, cfg, quiet, "") })
		select {
		case pub := <-ready:
			env.usherURL = "http://" + pub
			env.usherURLs = []string{env.usherURL}
		case err := <-errc:
			return fail(fmt.Errorf("start usher: %w", err))
		case <-time.After(20 * time.Second):
			return fail(fmt.Errorf("start usher: not listening after 20 s"))
		}
		return env, nil
	}

	// On Redis, usher's store must be at hand for its call counter, which
	// run does not give out: the node is wired here as run wires it.
	// Both ushers seal with one key given in the config, so that nothing
	// stays in Redis but the rooms' keys, which expire. A prefix of this
	// run's own keeps earlier runs' counters out.
	k, err := ticket.GenerateKey("bench")
	if err != nil {
		return fail(err)
	}
	keys := []config.Key{{ID: k.ID, Secret: ticket.EncodeSecret(k.Secret)}}
	cfg.Keys = keys
	var tag [4]byte
	_, _ = rand.Read(tag[:])
	cfg.Store.Redis = &config.Redis{
		Addrs:      strings.Split(opts.redis, ","),
		Cluster:    opts.cluster,
		KeyPrefix:  "usher-bench-" + hex.EncodeToString(tag[:]),
		ClockSlack: opts.clockSlack,
	}
	start := func(cfg *config.Config) (string, usher.Store, error) {
		store, engineOpts, err := openStore(ctx, cfg, quiet)
		if err != nil {
			return "", nil, err
		}
		closers = append(closers, store.Close)
		u, n, err := startNode(ctx, &wg, cfg, quiet, store, engineOpts)
		if n != nil {
			env.engines = append(env.engines, n.engine)
		}
		return u, store, err
	}
	var store usher.Store
	if env.usherURL, store, err = start(cfg); err != nil {
		return fail(fmt.Errorf("start usher on redis: %w", err))
	}
	env.redis, _ = store.(*redis.Store)
	env.usherURLs = []string{env.usherURL}
	for range opts.nodes - 1 {
		// Further nodes on the same store, each with its own client.
		more, err := selfConfig(dir, rooms, env.originURL)
		if err != nil {
			return fail(err)
		}
		more.TrustedProxies, more.Keys, more.Store.Redis = opts.trusted, keys, cfg.Store.Redis
		u, _, err := start(more)
		if err != nil {
			return fail(fmt.Errorf("start usher node %d on redis: %w", len(env.usherURLs)+1, err))
		}
		env.usherURLs = append(env.usherURLs, u)
	}
	if opts.compareEmbedded {
		embedded, err := selfConfig(dir, rooms, env.originURL)
		if err != nil {
			return fail(err)
		}
		embedded.TrustedProxies = opts.trusted
		embedded.Keys = keys
		if env.embeddedURL, _, err = start(embedded); err != nil {
			return fail(fmt.Errorf("start usher on the embedded store: %w", err))
		}
	}
	return env, nil
}

// startNode serves cfg's rooms over store on a public listener until ctx
// is done, as Main.run does (the same engine, metrics, gate and handler
// stack; no admin listener, no reloading), and returns its URL. The caller
// closes store after wg is done.
func startNode(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, log *slog.Logger, store usher.Store, engineOpts admission.Options) (string, *node, error) {
	n, err := newNode(ctx, cfg, log, store, engineOpts)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return "", nil, fmt.Errorf("listen: %w", err)
	}
	wg.Go(func() { _ = server.Serve(ctx, ln, n.handler, log) })
	n.events.node += " " + ln.Addr().String()
	n.background(ctx, wg, cfg, store, log)
	return "http://" + ln.Addr().String(), n, nil
}

// fixedPage is the origin the throughput scenario measures: a fixed 1 KB
// page, so that the origin's own work does not hide the proxies' (the
// sample shop renders templates). Requests of a virtual visitor (the
// flash crowd's) go to shop when it is not nil.
func fixedPage(shop http.Handler) http.Handler {
	page := []byte(strings.Repeat("usher bench page. ", 57))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if shop != nil && r.Header.Get(bench.HeaderVisitor) != "" {
			shop.ServeHTTP(w, r)
			return
		}
		w.Header().Set(bench.HeaderOrigin, "1")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
}

// fromOrigin reports whether an answer came from the sample origin.
func fromOrigin(r *http.Response) bool {
	return r.StatusCode == http.StatusOK && r.Header.Get(bench.HeaderOrigin) != ""
}
