package gate_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/autopilot"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/token"
)

// memOrigin is an origin that answers in memory, so that only the
// proxies' own work counts.
var memOrigin = roundTripFunc(func(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"X-Origin": {"1"}, "Content-Type": {"text/html"}},
		Body: io.NopCloser(strings.NewReader("inside")), ContentLength: 6, Request: r}, nil
})

// benchRequest is a GET for target with the cookie, as net/http's server
// hands it to a handler (no httptest parsing, which would cost more than
// what is measured).
func benchRequest(target *url.URL, cookie string) *http.Request {
	r := &http.Request{Method: "GET", URL: target, Host: target.Host, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:     http.Header{"Accept": {"text/html"}, "User-Agent": {"bench"}},
		RemoteAddr: "198.51.100.7:40000", RequestURI: target.RequestURI(), Body: http.NoBody}
	if cookie != "" {
		r.Header["Cookie"] = []string{cookie}
	}
	return r.WithContext(context.Background())
}

// benchWriter is a ResponseWriter that keeps nothing but the status.
type benchWriter struct {
	h    http.Header
	code int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) WriteHeader(code int)        { w.code = code }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) reset()                      { clear(w.h); w.code = 200 }

// BenchmarkAdmittedRequest is usher's own work for an admitted visitor's
// request, proxied to an origin that answers in memory, with what serve
// puts in front of the gate and around it: request ids, recover, the
// decision metrics and admission tokens. Compare with
// BenchmarkTunedProxy, the reference usher bench measures against.
func BenchmarkAdmittedRequest(b *testing.B) { benchAdmitted(b, false, false) }

// BenchmarkAdmittedRequestLoopback is BenchmarkAdmittedRequest to a real
// origin on loopback (an httptest server in this process), through the
// gate's own transport and lean origin client. Compare with
// BenchmarkTunedProxyLoopback.
func BenchmarkAdmittedRequestLoopback(b *testing.B) { benchAdmitted(b, false, true) }

// BenchmarkAdmittedRequestAutopilot is BenchmarkAdmittedRequest in a room
// whose autopilot watches the proxied answers: the engine asks the
// governor for the effective limits, and the gate counts each answer.
func BenchmarkAdmittedRequestAutopilot(b *testing.B) { benchAdmitted(b, true, false) }

func benchAdmitted(b *testing.B, withAutopilot, loopback bool) {
	room := testRoom("sale")
	room.TotalActiveUsers = 1 << 30
	metrics := admin.NewMetrics(nil, nil)
	var pilot *autopilot.Pilot
	if withAutopilot {
		room.Autopilot = usher.Autopilot{Enabled: true, Concurrency: true, MinNewUsersPerMinute: room.NewUsersPerMinute,
			MinTotalActiveUsers: room.TotalActiveUsers}
		pilot = &autopilot.Pilot{}
		pilot.SetRooms([]*usher.Room{room}, time.Now())
	}
	g, _ := featureGate(b, room, time.Now(), func(o *gate.Options) {
		if pilot != nil {
			st, err := local.Open(local.Options{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			o.Decider = admission.New(st, admission.Options{Limiter: pilot})
			o.Health = pilot.Recorder
		}
		if !loopback {
			o.Transport = memOrigin
		}
		o.Observe = metrics.ObserveDecision
		o.Now = time.Now // admission tokens are cached by the wall clock
		signer, err := token.New([]usher.Key{mustKey(b, "t1")}, token.Options{})
		if err != nil {
			b.Fatal(err)
		}
		o.Tokens = &gate.Tokens{Signer: signer}
	})
	h := server.RequestID(nil, server.Recover(nil, g))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/", nil))
	var c *http.Cookie
	for _, sc := range rec.Result().Cookies() {
		c = sc
	}
	if c == nil || rec.Header().Get("X-Origin") != "1" {
		b.Fatal("not admitted")
	}
	if pilot != nil {
		if n := pilot.Recorder(room.ID).Snapshot().Count; n != 1 {
			b.Fatalf("the first answer was counted %d times", n)
		}
	}
	target, _ := url.Parse("http://shop.test/product/1")
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	cookie := c.Name + "=" + c.Value
	for b.Loop() {
		w.reset()
		h.ServeHTTP(w, benchRequest(target, cookie))
		if w.code != 200 || w.h.Get("X-Origin") != "1" {
			b.Fatal(w.code)
		}
		// The visitor keeps the renewed ticket (about once a second), as
		// a browser does.
		if sc := w.h["Set-Cookie"]; len(sc) > 0 {
			nc, err := http.ParseSetCookie(sc[0])
			if err != nil || nc.Name != c.Name {
				b.Fatal(sc, err)
			}
			cookie = nc.Name + "=" + nc.Value
		}
	}
}

// BenchmarkTunedProxy is the reference of BenchmarkAdmittedRequest: an
// httputil.ReverseProxy with the gate's buffer pool (usher bench's
// proxy-tuned), to the same in-memory origin, for the same request.
func BenchmarkTunedProxy(b *testing.B) {
	origin, _ := url.Parse("http://origin.test")
	benchTunedProxy(b, origin, memOrigin)
}

// BenchmarkTunedProxyLoopback is BenchmarkTunedProxy to a real origin on
// loopback, answering as featureGate's origin does, through the gate's
// transport (gate.NewTransport): the reference of
// BenchmarkAdmittedRequestLoopback.
func BenchmarkTunedProxyLoopback(b *testing.B) {
	o := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, "inside")
	}))
	defer o.Close()
	origin, _ := url.Parse(o.URL)
	tr := gate.NewTransport()
	defer tr.CloseIdleConnections()
	benchTunedProxy(b, origin, tr)
}

// benchTunedProxy loads an httputil.ReverseProxy with the gate's buffer
// pool to origin through tr with the admitted request's shape.
func benchTunedProxy(b *testing.B, origin *url.URL, tr http.RoundTripper) {
	p := &httputil.ReverseProxy{
		Rewrite:    func(r *httputil.ProxyRequest) { r.SetURL(origin); r.SetXForwarded() },
		Transport:  tr,
		BufferPool: gate.NewBufferPool(),
	}
	target, _ := url.Parse("http://shop.test/product/1")
	w := &benchWriter{h: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		w.reset()
		p.ServeHTTP(w, benchRequest(target, "__usher_wr=0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz"))
		if w.code != 200 || w.h.Get("X-Origin") != "1" {
			b.Fatal(w.code)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
