package selfbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/server"
)

// ChildEnv marks a process usher bench started as one of its targets: the
// hidden command bench-target runs only with it set.
const ChildEnv = "USHER_BENCH_CHILD"

// profileEnv, when set to a directory, makes every target process the
// throughput scenario starts write its CPU profile there when it stops
// (usher.cpu.pprof, proxy-tuned.cpu.pprof, ...).
const profileEnv = "USHER_BENCH_CPUPROFILE"

// Child is the hidden command bench-target, args its arguments: one server
// of the throughput scenario in a process of its own, so that its CPU time
// is its own, usher's run by p. It prints "listening ADDR" on stdout once
// it accepts connections and serves until ctx is done (SIGTERM); a bad
// command line is ErrUsage, explained on stderr.
//
//	bench-target proxy --origin URL [--unpooled]
//	bench-target usher --dir DIR --rooms FILE --origin URL [--trusted CIDR]
//	    [--redis ADDRS [--redis-cluster] --key-prefix P --key-file FILE [--node K]]
//	bench-target static --refresh D --max-refresh D
//	bench-target origin
//	bench-target load --url URL --workers N --duration D [--header 'Name: value']...
func Child(ctx context.Context, args []string, p *Product, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("bench-target: proxy or usher")
	}
	fs := flag.NewFlagSet("bench-target", flag.ContinueOnError)
	fs.SetOutput(stderr)
	origin := fs.String("origin", "", "the origin's URL")
	unpooled := fs.Bool("unpooled", false, "proxy: no buffer pool, as httputil.ReverseProxy is by default")
	dir := fs.String("dir", "", "usher: the embedded store's directory")
	rooms := fs.String("rooms", "", "usher: a file with the rooms' YAML (%s where the origin goes)")
	trusted := fs.String("trusted", "", "usher: trusted proxies, comma-separated")
	forwardAuth := fs.String("forward-auth", "", "usher: the private forward-auth listener's address (forward_auth.listen)")
	redisAddrs := fs.String("redis", "", "usher: the Redis store's address (seed nodes, comma-separated, with --redis-cluster); empty: the embedded store in --dir")
	redisCluster := fs.Bool("redis-cluster", false, "usher: --redis is a Redis Cluster")
	keyPrefix := fs.String("key-prefix", "", "usher: with --redis, the prefix of every key (store.redis.key_prefix), shared by the nodes")
	keyFile := fs.String("key-file", "", "usher: with --redis, a file holding the ticket key the nodes share: its ID and secret on one line")
	node := fs.Int("node", 1, "usher: this node's number among those sharing --redis (its profiles' names)")
	refresh := fs.Duration("refresh", 20*time.Second, "static: the first interval")
	maxRefresh := fs.Duration("max-refresh", 2*time.Minute, "static: the longest interval")
	loadURL := fs.String("url", "", "load: the URL every request asks for")
	workers := fs.Int("workers", 32, "load: requests in flight")
	duration := fs.Duration("duration", 3*time.Second, "load: how long")
	var headers headerList
	fs.Var(&headers, "header", "load: a header every request carries (Name: value; repeatable)")
	if err := fs.Parse(args[1:]); err != nil {
		return ErrUsage
	}
	kind := args[0]
	if prof := os.Getenv(profileEnv); prof != "" {
		name := kind
		if kind == "usher" && *node > 1 {
			name = fmt.Sprintf("usher-node%d", *node)
		}
		if kind == "proxy" {
			name = "proxy-tuned"
			if *unpooled {
				name = "proxy-unpooled"
			}
		}
		f, err := os.Create(filepath.Join(prof, name+".cpu.pprof"))
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
		// The heap at the end, before shutdown closes the connections:
		// name.heap.pprof (inuse_space as of the last collection) and
		// name.memstats.txt (runtime.MemStats, goroutines).
		// On SIGUSR1 (the standing-room bench sends it at each step's
		// end), and when it stops.
		// On SIGUSR2, an execution trace of the next 5 s (name.trace: where
		// a request waited, for latency that CPU profiles do not show).
		// Contention on mutexes is sampled throughout (name.mutex.pprof,
		// with the heap).
		runtime.SetMutexProfileFraction(20)
		defer runtime.SetMutexProfileFraction(0)
		usr1, usr2 := make(chan os.Signal, 1), make(chan os.Signal, 1)
		signal.Notify(usr1, syscall.SIGUSR1)
		signal.Notify(usr2, syscall.SIGUSR2)
		defer signal.Stop(usr1)
		defer signal.Stop(usr2)
		memDone := make(chan struct{})
		go func() {
			defer close(memDone)
			for {
				select {
				case <-usr2:
					writeTrace(filepath.Join(prof, name+".trace"), 5*time.Second)
				case <-usr1:
					writeMemProfile(filepath.Join(prof, name))
				case <-ctx.Done():
					writeMemProfile(filepath.Join(prof, name+".end"))
					return
				}
			}
		}()
		defer func() {
			if ctx.Err() != nil {
				<-memDone
			}
		}()
	}
	quiet := slog.New(slog.DiscardHandler)
	switch kind {
	case "load":
		return loadTarget(ctx, stdout, *loadURL, *workers, *duration, headers)
	case "origin":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
		return server.Serve(ctx, ln, fixedPage(nil), quiet)
	case "proxy":
		target, err := url.Parse(*origin)
		if err != nil || target.Host == "" {
			return fmt.Errorf("bench-target: --origin: %q is not a URL", *origin)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
		return server.Serve(ctx, ln, referenceProxy(target, !*unpooled), quiet)
	case "static":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "listening %s\n", ln.Addr())
		return server.Serve(ctx, ln, staticWaiting(*refresh, *maxRefresh), quiet)
	case "usher":
		yaml, err := os.ReadFile(*rooms)
		if err != nil {
			return err
		}
		cfg, err := SelfConfig(*dir, string(yaml), *origin)
		if err != nil {
			return err
		}
		if *trusted != "" {
			cfg.TrustedProxies = strings.Split(*trusted, ",")
		}
		cfg.ForwardAuth.Listen = *forwardAuth
		if *redisAddrs != "" {
			if err := childRedis(cfg, *redisAddrs, *redisCluster, *keyPrefix, *keyFile); err != nil {
				return err
			}
		}
		return p.Serve(ctx, cfg, quiet, func(pub, _ string) {
			fmt.Fprintf(stdout, "listening %s\n", pub)
		})
	}
	return fmt.Errorf("bench-target: unknown target %q", kind)
}

// childRedis puts usher's state in Redis at addrs (comma-separated), under
// keyPrefix, and seals tickets with the key in keyFile ("ID SECRET"), so
// that the nodes sharing the store open each other's tickets and leave
// nothing in Redis but the rooms' keys, which expire.
func childRedis(cfg *config.Config, addrs string, cluster bool, keyPrefix, keyFile string) error {
	if keyPrefix == "" || keyFile == "" {
		return fmt.Errorf("bench-target: --redis needs --key-prefix and --key-file")
	}
	b, err := os.ReadFile(keyFile)
	if err != nil {
		return err
	}
	id, secret, ok := strings.Cut(strings.TrimSpace(string(b)), " ")
	if !ok {
		return fmt.Errorf("bench-target: --key-file %s: want the key's ID and secret on one line", keyFile)
	}
	cfg.Keys = []config.Key{{ID: id, Secret: secret}}
	cfg.Store.Redis = &config.Redis{Addrs: strings.Split(addrs, ","), Cluster: cluster, KeyPrefix: keyPrefix}
	return nil
}

// referenceProxy is the reference the throughput scenario measures usher
// against: an httputil.ReverseProxy to target setting X-Forwarded-*, with
// the gate's own transport and, when pooled (proxy-tuned), its buffer pool.
// Unpooled (proxy-unpooled), it allocates a copy buffer per response, as
// ReverseProxy does by default.
func referenceProxy(target *url.URL, pooled bool) *httputil.ReverseProxy {
	p := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		},
		Transport: gate.NewTransport(),
	}
	if pooled {
		p.BufferPool = gate.NewBufferPool()
	}
	return p
}

// childTarget is a bench target running in a process of its own.
type childTarget struct {
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	errs *childStderr
}

// headerList is a repeatable flag's values.
type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

// startChild starts this executable's bench-target with args and returns
// once it listens.
func startChild(ctx context.Context, args ...string) (*childTarget, error) {
	return startChildOn(ctx, "", args...)
}

// startChildOn is startChild on the CPUs cpus (a taskset list; empty: any).
func startChildOn(ctx context.Context, cpus string, args ...string) (*childTarget, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := pinnedCommand(cpus, exe, append([]string{"bench-target"}, args...)...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	c := &childTarget{cmd: cmd, done: make(chan struct{}), errs: &childStderr{}}
	cmd.Stderr = c.errs
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bench target %s: %w", args[0], err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addr <- a
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(c.done)
	}()
	select {
	case a := <-addr:
		c.url = "http://" + a
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("bench target %s exited at start: %s", args[0], strings.TrimSpace(c.errs.String()))
	case <-ctx.Done():
		c.stop()
		return nil, ctx.Err()
	case <-time.After(30 * time.Second):
		c.stop()
		return nil, errors.New("bench target " + args[0] + " did not listen in 30 s")
	}
}

// cpu returns the CPU time (user and system) the target has used so far.
func (c *childTarget) cpu() time.Duration { return procCPU(c.cmd.Process.Pid) }

// stop stops the target: SIGTERM, or a kill after 10 s.
func (c *childTarget) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// childStderr keeps the first 64 KB a target writes on stderr, for the
// error when it fails to start; safe for a writer and a reader at once.
type childStderr struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *childStderr) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 64<<10 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *childStderr) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// writeTrace writes an execution trace of the next d to path.
func writeTrace(path string, d time.Duration) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	if trace.Start(f) != nil {
		return
	}
	time.Sleep(d)
	trace.Stop()
}

// writeMemProfile writes base.heap.pprof and base.memstats.txt: where the
// process's memory is, for the profiles profileEnv asks for.
func writeMemProfile(base string) {
	if f, err := os.Create(base + ".heap.pprof"); err == nil {
		_ = pprof.Lookup("heap").WriteTo(f, 0)
		_ = f.Close()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	txt := fmt.Sprintf("Sys %d\nHeapSys %d\nHeapInuse %d\nHeapIdle %d\nHeapReleased %d\nHeapAlloc %d\nNextGC %d\nStackInuse %d\nStackSys %d\nMSpanInuse %d\nMCacheInuse %d\nBuckHashSys %d\nGCSys %d\nOtherSys %d\nNumGC %d\nGoroutines %d\n",
		ms.Sys, ms.HeapSys, ms.HeapInuse, ms.HeapIdle, ms.HeapReleased, ms.HeapAlloc, ms.NextGC,
		ms.StackInuse, ms.StackSys, ms.MSpanInuse, ms.MCacheInuse, ms.BuckHashSys, ms.GCSys, ms.OtherSys,
		ms.NumGC, runtime.NumGoroutine())
	_ = os.WriteFile(base+".memstats.txt", []byte(txt), 0o600)
	if f, err := os.Create(base + ".mutex.pprof"); err == nil {
		_ = pprof.Lookup("mutex").WriteTo(f, 0)
		_ = f.Close()
	}
	if f, err := os.Create(base + ".goroutines.txt"); err == nil {
		_ = pprof.Lookup("goroutine").WriteTo(f, 1)
		_ = f.Close()
	}
}
