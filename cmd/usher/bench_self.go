package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/server"
)

// selfEnv is usher bench --self: a sample origin, a plain
// httputil.ReverseProxy to it (the reference), and usher in front of it,
// all in this process on loopback.
type selfEnv struct {
	origin    *bench.Origin
	originURL string
	proxyURL  string
	usherURL  string
	stop      func()
}

// startSelf starts the environment with rooms (YAML of the rooms list, with
// %s where the origin URL goes).
func (m *Main) startSelf(ctx context.Context, rooms string) (*selfEnv, error) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	env := &selfEnv{origin: bench.NewOrigin("bench shop")}
	// Throughput is measured against a fixed 1 KB page, so that the
	// origin's own work does not hide the proxies' (the sample shop
	// renders templates); visitors of the flash crowd get the shop.
	page := []byte(strings.Repeat("usher bench page. ", 57))
	fixed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(bench.HeaderVisitor) != "" {
			env.origin.ServeHTTP(w, r)
			return
		}
		w.Header().Set(bench.HeaderOrigin, "1")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page)
	})
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
		os.RemoveAll(dir)
	}
	fail := func(err error) (*selfEnv, error) {
		env.stop()
		return nil, err
	}
	if env.originURL, err = serve(fixed); err != nil {
		return fail(err)
	}
	target, _ := url.Parse(env.originURL)
	plain := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.SetXForwarded()
		},
		Transport: proxyTransport(),
	}
	if env.proxyURL, err = serve(plain); err != nil {
		return fail(err)
	}
	cfg, err := config.Parse(strings.NewReader(fmt.Sprintf("listen: 127.0.0.1:0\nstore:\n  embedded:\n    path: %s\nrooms:\n%s",
		dir, strings.ReplaceAll(rooms, "%s", env.originURL))))
	if err != nil {
		return fail(fmt.Errorf("bench config: %w", err))
	}
	ready := make(chan string, 1)
	inner := &Main{Stdout: io.Discard, Stderr: io.Discard, Ready: func(pub, _ string) { ready <- pub }}
	errc := make(chan error, 1)
	wg.Go(func() { errc <- inner.run(ctx, cfg, quiet, "") })
	select {
	case pub := <-ready:
		env.usherURL = "http://" + pub
	case err := <-errc:
		return fail(fmt.Errorf("start usher: %w", err))
	case <-time.After(20 * time.Second):
		return fail(fmt.Errorf("start usher: not listening after 20 s"))
	}
	return env, nil
}

// proxyTransport is the plain proxy's transport: the same settings as the
// gate's (a clone of the default with 100 idle connections per host).
func proxyTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 100
	return t
}

// fromOrigin reports whether an answer came from the sample origin.
func fromOrigin(r *http.Response) bool {
	return r.StatusCode == http.StatusOK && r.Header.Get(bench.HeaderOrigin) != ""
}
