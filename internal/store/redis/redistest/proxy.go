package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy is a TCP proxy in the test's process, in front of a server, that
// injects faults on demand: toxiproxy's own proxy, used as a library.
type Proxy struct {
	t testing.TB
	p *toxiproxy.Proxy
}

// StartProxy starts a proxy on a free loopback port that forwards to
// upstream (host:port), and stops it when the test ends.
func StartProxy(t testing.TB, upstream string) *Proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "redis", "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	t.Cleanup(p.Stop)
	return &Proxy{t: t, p: p}
}

// Addr returns the proxy's host:port.
func (p *Proxy) Addr() string { return p.p.Listen }

// Latency delays every reply of the server by d (toxiproxy's latency
// toxic on the downstream stream), on connections open and to come.
func (p *Proxy) Latency(d time.Duration) {
	p.t.Helper()
	body := fmt.Sprintf(`{"name":"latency","type":"latency","stream":"downstream","attributes":{"latency":%d}}`, d.Milliseconds())
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		p.t.Fatalf("redistest: proxy latency: %v", err)
	}
}

// Clear removes every fault.
func (p *Proxy) Clear() { p.p.Toxics.ResetToxics(context.Background()) }
