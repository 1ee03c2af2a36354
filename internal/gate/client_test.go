package gate

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestLeanClientOnlyWhereItApplies: the lean client is used with the
// gate's own transport only, and not when the environment's HTTP proxy
// applies to an origin.
func TestLeanClientOnlyWhereItApplies(t *testing.T) {
	room := testRoom("sale", "/sale", "http://origin.example")
	if g, _ := newGate(t, Options{Rooms: []*usher.Room{room}}); g.lean == nil {
		t.Error("no lean client with the gate's own transport")
	}
	if g, _ := newGate(t, Options{Rooms: []*usher.Room{room}, Transport: http.DefaultTransport}); g.lean != nil {
		t.Error("a lean client beside a transport the caller chose")
	}
	tr := NewTransport()
	proxy, _ := url.Parse("http://proxy.example:3128")
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "origin.example" {
			return proxy, nil
		}
		return nil, nil
	}
	def, _ := url.Parse("http://other.example")
	origins := map[*usher.Room]*url.URL{room: {Scheme: "http", Host: "origin.example"}}
	if !viaProxy(tr, def, origins) {
		t.Error("an origin behind the proxy was not seen")
	}
	if viaProxy(tr, def, nil) {
		t.Error("an origin not behind the proxy was taken for one")
	}
}

// TestLeanClientClosesStaleConnections: connections idle longer than the
// idle timeout are closed by the sweep, the others kept (oldest first).
func TestLeanClientClosesStaleConnections(t *testing.T) {
	cl := newOriginClient(10, time.Minute)
	now := time.Now()
	var peers []net.Conn
	mk := func(idle time.Duration) *originConn {
		a, b := net.Pipe()
		peers = append(peers, b)
		return &originConn{c: a, br: bufio.NewReader(a), key: "o:80", idleSince: now.Add(-idle)}
	}
	old1, old2, fresh := mk(3*time.Minute), mk(2*time.Minute), mk(time.Second)
	cl.idle["o:80"] = []*originConn{old1, old2, fresh}
	cl.closeStale()
	if got := cl.idle["o:80"]; len(got) != 1 || got[0] != fresh {
		t.Fatalf("kept %d connections, want the fresh one", len(got))
	}
	for i, p := range peers[:2] {
		_ = p.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := p.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("stale connection %d: read %v, want EOF (closed)", i, err)
		}
	}
	if cl.sweep == nil {
		t.Error("no next sweep while a connection is idle")
	}
	cl.closeIdle()
	if len(cl.idle) != 0 || cl.sweep != nil {
		t.Errorf("closeIdle left %d origins, sweep %v", len(cl.idle), cl.sweep)
	}
}
