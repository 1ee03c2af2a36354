package selfbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/ticket"
)

// Env is usher bench --self: a sample origin and usher in front of it, on
// loopback, in this process unless said otherwise (selfOptions); with
// reference proxies for the throughput scenario.
type Env struct {
	origin    *bench.Origin
	originURL string
	// UsherURL is usher's (the first node's) public URL.
	UsherURL string
	// usherURLs are every usher node's URL, UsherURL first
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
	// calls counts the commands usher's store sent when it runs on Redis
	// (selfOptions.redis: redis.Store.Calls); nil on the embedded store.
	calls func() int64
	// embeddedURL is a second usher, on the embedded store, with the same
	// rooms and origin (selfOptions.compareEmbedded); empty without.
	embeddedURL string
	// nodes are the usher nodes started in this process on Redis, for
	// their counters.
	nodes []*Node
	stop  func()
}

// Stop stops the environment: usher, the origin and every process it
// started.
func (env *Env) Stop() { env.stop() }

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
	// proxies starts the reference proxies (Env.tuned, .unpooled).
	proxies bool
	// separate runs usher in a process of its own (embedded store only),
	// so that its CPU time can be read apart from the load generator's.
	separate bool
	// originProc runs the origin in a process of its own (Env.originProc;
	// the fixed page only), and pin is the CPUs (a taskset list) of every
	// process the environment starts, empty: any (usher bench --external).
	originProc bool
	pin        string
}

// SelfConfig is the self environment's usher config: rooms (YAML of the
// rooms list, with %s where the origin URL goes) on the embedded store in
// dir.
func SelfConfig(dir, rooms, originURL string) (*config.Config, error) {
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf("listen: 127.0.0.1:0\nstore:\n  embedded:\n    path: %s\nrooms:\n%s",
		dir, strings.ReplaceAll(rooms, "%s", originURL))))
	if err != nil {
		return nil, fmt.Errorf("bench config: %w", err)
	}
	return cfg, nil
}

// StartSelf starts the environment with rooms (YAML of the rooms list, with
// %s where the origin URL goes), usher on the embedded store in this
// process, run by p.
func StartSelf(ctx context.Context, rooms string, p *Product) (*Env, error) {
	return startSelfWith(ctx, rooms, selfOptions{}, p)
}

// startSelfWith starts the environment with rooms and opts.
func startSelfWith(ctx context.Context, rooms string, opts selfOptions, p *Product) (*Env, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var closers []func() error
	env := &Env{origin: bench.NewOrigin("bench shop")}
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
	fail := func(err error) (*Env, error) {
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
		env.UsherURL = env.usherProc.url
		return env, nil
	}
	cfg, err := SelfConfig(dir, rooms, env.originURL)
	if err != nil {
		return fail(err)
	}
	cfg.TrustedProxies = opts.trusted
	if opts.redis == "" {
		ready := make(chan string, 1)
		errc := make(chan error, 1)
		wg.Go(func() { errc <- p.Serve(ctx, cfg, quiet, func(pub, _ string) { ready <- pub }) })
		select {
		case pub := <-ready:
			env.UsherURL = "http://" + pub
			env.usherURLs = []string{env.UsherURL}
		case err := <-errc:
			return fail(fmt.Errorf("start usher: %w", err))
		case <-time.After(20 * time.Second):
			return fail(fmt.Errorf("start usher: not listening after 20 s"))
		}
		return env, nil
	}

	// On Redis, usher's store must be at hand for its call counter, which
	// Serve does not give out: the nodes are started with StartNode.
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
	start := func(cfg *config.Config) (*Node, error) {
		n, err := p.StartNode(ctx, &wg, cfg, quiet)
		if n != nil && n.Store != nil {
			closers = append(closers, n.Store.Close)
		}
		return n, err
	}
	first, err := start(cfg)
	if err != nil {
		return fail(fmt.Errorf("start usher on redis: %w", err))
	}
	env.nodes = append(env.nodes, first)
	if c, ok := first.Store.(interface{ Calls() int64 }); ok {
		env.calls = c.Calls
	}
	env.UsherURL = first.URL
	env.usherURLs = []string{env.UsherURL}
	for range opts.nodes - 1 {
		// Further nodes on the same store, each with its own client.
		more, err := SelfConfig(dir, rooms, env.originURL)
		if err != nil {
			return fail(err)
		}
		more.TrustedProxies, more.Keys, more.Store.Redis = opts.trusted, keys, cfg.Store.Redis
		n, err := start(more)
		if err != nil {
			return fail(fmt.Errorf("start usher node %d on redis: %w", len(env.usherURLs)+1, err))
		}
		env.nodes = append(env.nodes, n)
		env.usherURLs = append(env.usherURLs, n.URL)
	}
	if opts.compareEmbedded {
		embedded, err := SelfConfig(dir, rooms, env.originURL)
		if err != nil {
			return fail(err)
		}
		embedded.TrustedProxies = opts.trusted
		embedded.Keys = keys
		n, err := start(embedded)
		if err != nil {
			return fail(fmt.Errorf("start usher on the embedded store: %w", err))
		}
		env.embeddedURL = n.URL
	}
	return env, nil
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
