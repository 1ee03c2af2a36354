package gate

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
)

// The differential test of usher's proxy core: the same hostile requests,
// as raw bytes, go through usher's forwarder (pass and the lean origin
// client) and through a standard httputil.ReverseProxy configured as
// usher's config would be (the same trusted proxies, Rewrite with SetURL
// and SetXForwarded, the earlier X-Forwarded-For hops and the
// X-Forwarded-Host and -Proto kept only from a trusted peer), each to its
// own recording origin: a raw TCP listener that parses what arrives. What
// the two origins get must agree (method, request target, Host, headers
// after canonicalisation, framing and body), but for the differences
// usher intends, listed in intendedDiff.

// diffCases are the hostile requests (CRLF-joined lines; the text after
// the last "" line is the body, sent as it is).
var diffCases = []struct {
	name string
	req  []string
}{
	{"plain get", []string{"GET /a HTTP/1.1", "Host: shop.example", "", ""}},
	{"head", []string{"HEAD /a HTTP/1.1", "Host: shop.example", "", ""}},
	{"http/1.0 no host", []string{"GET /a HTTP/1.0", "", ""}},
	{"connection close", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: close", "", ""}},
	{"connection names a header", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: X-Secret", "X-Secret: 1", "X-Kept: 2", "", ""}},
	{"connection names several, odd case", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: keep-alive, x-secret ,X-OTHER", "X-Secret: 1", "X-Other: 2", "Keep-Alive: timeout=5", "", ""}},
	{"connection names cookie", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: Cookie", "Cookie: a=1", "", ""}},
	{"connection names authorization", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: Authorization", "Authorization: Bearer x", "", ""}},
	{"connection names x-forwarded-for", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: X-Forwarded-For", "X-Forwarded-For: 192.0.2.9", "", ""}},
	{"connection names te", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: TE", "TE: trailers", "", ""}},
	{"connection names host", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: Host", "", ""}},
	{"two connection headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: X-A", "Connection: X-B", "X-A: 1", "X-B: 2", "", ""}},
	{"proxy headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "Proxy-Connection: keep-alive", "Proxy-Authorization: Basic eDp5", "Proxy-Authenticate: Basic", "", ""}},
	{"te trailers", []string{"GET /a HTTP/1.1", "Host: shop.example", "TE: trailers", "", ""}},
	{"te list with trailers", []string{"GET /a HTTP/1.1", "Host: shop.example", "TE: gzip;q=0.5, Trailers", "", ""}},
	{"te without trailers", []string{"GET /a HTTP/1.1", "Host: shop.example", "TE: deflate", "", ""}},
	{"trailer announced", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked", "Trailer: X-Sum", "", "3\r\nabc\r\n0\r\nX-Sum: 9\r\n\r\n"}},
	{"chunked body", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked", "", "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"}},
	{"chunked, odd case", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: Chunked", "", "3\r\nabc\r\n0\r\n\r\n"}},
	{"chunk extension", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked", "", "3;ext=1\r\nabc\r\n0\r\n\r\n"}},
	{"content-length body", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 5", "", "hello"}},
	{"content-length zero", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 0", "", ""}},
	{"get with body", []string{"GET /a HTTP/1.1", "Host: shop.example", "Content-Length: 5", "", "hello"}},
	{"delete with body", []string{"DELETE /a HTTP/1.1", "Host: shop.example", "Content-Length: 2", "", "{}"}},
	{"cl and te", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 4", "Transfer-Encoding: chunked", "", "0\r\n\r\n"}},
	{"te and cl", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked", "Content-Length: 40", "", "0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: shop.example\r\n\r\n"}},
	{"two equal cls", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 3", "Content-Length: 3", "", "abc"}},
	{"two cls differ", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 0", "Content-Length: 3", "", "abc"}},
	{"cl list", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 3, 3", "", "abc"}},
	{"cl plus sign", []string{"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: +3", "", "abc"}},
	{"te chunked twice", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked, chunked", "", "0\r\n\r\n"}},
	{"te gzip chunked", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: gzip, chunked", "", "0\r\n\r\n"}},
	{"te identity", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: identity", "Content-Length: 3", "", "abc"}},
	{"te obfuscated", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: xchunked", "Content-Length: 0", "", ""}},
	{"te with space before colon", []string{"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding : chunked", "Content-Length: 0", "", ""}},
	{"connection names content-length", []string{"POST /a HTTP/1.1", "Host: shop.example", "Connection: Content-Length", "Content-Length: 4", "", "abcd"}},
	{"connection names transfer-encoding", []string{"POST /a HTTP/1.1", "Host: shop.example", "Connection: Transfer-Encoding", "Transfer-Encoding: chunked", "", "2\r\nab\r\n0\r\n\r\n"}},
	{"obs-fold", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Folded: one", " two", "", ""}},
	{"obs-fold in connection", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: keep-alive,", " X-Secret", "X-Secret: 1", "", ""}},
	{"header with empty value", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Empty:", "", ""}},
	{"duplicate headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-A: 1", "x-a: 2", "X-A: 3", "", ""}},
	{"space in header name", []string{"GET /a HTTP/1.1", "Host: shop.example", "X Bad: 1", "", ""}},
	{"two hosts", []string{"GET /a HTTP/1.1", "Host: shop.example", "Host: evil.example", "", ""}},
	{"other host", []string{"GET /a HTTP/1.1", "Host: other.example:8080", "", ""}},
	{"absolute form", []string{"GET http://evil.example/x?q=1 HTTP/1.1", "Host: shop.example", "", ""}},
	{"absolute form with userinfo", []string{"GET http://u:p@evil.example/x HTTP/1.1", "Host: shop.example", "", ""}},
	{"asterisk options", []string{"OPTIONS * HTTP/1.1", "Host: shop.example", "", ""}},
	{"trace", []string{"TRACE /a HTTP/1.1", "Host: shop.example", "", ""}},
	{"unknown method", []string{"PURGE /a HTTP/1.1", "Host: shop.example", "", ""}},
	{"client forwarding headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Forwarded-For: 192.0.2.9, 198.51.100.1", "X-Forwarded-Host: evil.example", "X-Forwarded-Proto: https", "Forwarded: for=192.0.2.9;host=evil.example;proto=https", "", ""}},
	{"two x-forwarded-for", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Forwarded-For: 192.0.2.9", "X-Forwarded-For: 198.51.100.1", "", ""}},
	{"underscore forwarding headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "X_Forwarded_For: 192.0.2.9", "x_forwarded_host: evil.example", "", ""}},
	{"odd case forwarding headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "x-FORWARDED-for: 192.0.2.9", "FORWARDED: for=1.2.3.4", "", ""}},
	{"usher headers", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Usher-Visitor: forged", "X_Usher_Room: forged", "", ""}},
	{"request id", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Request-Id: forged", "", ""}},
	{"expect continue", []string{"POST /a HTTP/1.1", "Host: shop.example", "Expect: 100-continue", "Content-Length: 5", "", "hello"}},
	{"expect other", []string{"POST /a HTTP/1.1", "Host: shop.example", "Expect: something", "Content-Length: 0", "", ""}},
	{"upgrade without connection", []string{"GET /a HTTP/1.1", "Host: shop.example", "Upgrade: websocket", "", ""}},
	{"h2c upgrade", []string{"GET /a HTTP/1.1", "Host: shop.example", "Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA", "", ""}},
	{"query with semicolon", []string{"GET /a?x=1;y=2 HTTP/1.1", "Host: shop.example", "", ""}},
	{"query bad escape", []string{"GET /a?x=%zz&y=2 HTTP/1.1", "Host: shop.example", "", ""}},
	{"encoded slash and dots", []string{"GET /a%2fb/../c/./d HTTP/1.1", "Host: shop.example", "", ""}},
	{"double slash", []string{"GET //a//b HTTP/1.1", "Host: shop.example", "", ""}},
	{"via and max-forwards", []string{"GET /a HTTP/1.1", "Host: shop.example", "Via: 1.1 evil", "Max-Forwards: 0", "", ""}},
	{"range and encodings", []string{"GET /a HTTP/1.1", "Host: shop.example", "Range: bytes=0-1", "Accept-Encoding: gzip, br", "", ""}},
	{"no user agent", []string{"GET /a HTTP/1.1", "Host: shop.example", "", ""}},
	{"user agent", []string{"GET /a HTTP/1.1", "Host: shop.example", "User-Agent: curl/8", "", ""}},
	{"pipelined", []string{"GET /a HTTP/1.1", "Host: shop.example", "", "GET /b HTTP/1.1\r\nHost: shop.example\r\n\r\n"}},
	{"long header", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Long: " + strings.Repeat("x", 8000), "", ""}},
	{"nul in header value", []string{"GET /a HTTP/1.1", "Host: shop.example", "X-Nul: a\x00b", "", ""}},
	{"bare lf", []string{"GET /a HTTP/1.1\nHost: shop.example\nX-Lf: 1\n\n"}},
}

// diffRecord is one request an origin got, as it parsed it.
type diffRecord struct {
	method, target, host, proto string
	header                      http.Header
	contentLength               int64
	transferEncoding            []string
	body                        string
	trailer                     http.Header
	err                         string // a request the origin could not parse
}

// recordingOrigin is a raw TCP origin that parses each request it gets
// and answers 200 "ok".
type recordingOrigin struct {
	ln  net.Listener
	mu  sync.Mutex
	got []diffRecord
}

func newRecordingOrigin(t *testing.T) *recordingOrigin {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	o := &recordingOrigin{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go o.serve(c)
		}
	}()
	return o
}

func (o *recordingOrigin) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		req, err := http.ReadRequest(br)
		if err != nil {
			if err != io.EOF && !isTimeout(err) && !strings.Contains(err.Error(), "closed") {
				o.add(diffRecord{err: err.Error()})
			}
			return
		}
		body, berr := io.ReadAll(req.Body)
		r := diffRecord{method: req.Method, target: req.RequestURI, host: req.Host, proto: req.Proto,
			header: req.Header, contentLength: req.ContentLength, transferEncoding: req.TransferEncoding,
			body: string(body), trailer: req.Trailer}
		if berr != nil {
			r.err = "body: " + berr.Error()
		}
		o.add(r)
		answer := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
		if req.Method == http.MethodHead {
			answer = strings.TrimSuffix(answer, "ok")
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func (o *recordingOrigin) add(r diffRecord) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, r)
}

func (o *recordingOrigin) records() []diffRecord {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.got)
}

func (o *recordingOrigin) url() string { return "http://" + o.ln.Addr().String() }

// referenceProxy is httputil.ReverseProxy set up as usher's config sets
// up its proxying: to target, X-Forwarded-* from the peer, the earlier
// hops and the client's X-Forwarded-Host and -Proto believed only from a
// trusted peer.
func referenceProxy(target *url.URL, trusted []netip.Prefix) http.Handler {
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			_, scheme, host := server.ClientInfo(pr.In, trusted)
			if server.IsTrusted(server.PeerAddr(pr.In), trusted) {
				pr.Out.Header["X-Forwarded-For"] = pr.In.Header["X-Forwarded-For"]
			}
			pr.SetXForwarded()
			pr.Out.Header.Set("X-Forwarded-Proto", scheme)
			pr.Out.Header.Set("X-Forwarded-Host", host)
		},
		ErrorLog: nil,
	}
}

// intendedDiff reports whether the header k may differ between what
// usher's forwarder sends (inUsher: it has it) and what ReverseProxy
// sends, and why.
func intendedDiff(k string, inUsher bool) (string, bool) {
	switch {
	case k == server.RequestIDHeader:
		return "usher sets its own request id", true
	case !inUsher && hasNamePrefix(k, "x-usher-"):
		return "usher removes client copies of its X-Usher-* headers, in any case, with _ for -", true
	case !inUsher && isForwarding(k):
		return "usher removes client copies of the forwarding headers written with _ for -", true
	case !inUsher && k == "Accept-Encoding":
		return "http.Transport asks for gzip (and unzips) when the client did not; usher's lean client passes the client's choice", true
	}
	return "", false
}

// sendRaw writes req to addr and reads the answers until none comes for
// a while; it returns their statuses.
func sendRaw(addr, req string) []int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return nil
	}
	br := bufio.NewReader(c)
	var codes []int
	wait := 5 * time.Second
	for {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return codes
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		wait = 300 * time.Millisecond
	}
}

// diffResult is what one case brought to the two origins.
type diffResult struct {
	ru, rrp []diffRecord
	cu, crp []int
}

// runDiffCase sends req through usher's forwarder and through the
// reference proxy, each in front of its own recording origin.
func runDiffCase(t *testing.T, req string, trusted []netip.Prefix) diffResult {
	ou, orp := newRecordingOrigin(t), newRecordingOrigin(t)
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/", ou.url())}, Trusted: trusted})
	fu := httptest.NewServer(server.RequestID(nil, server.Recover(nil, g)))
	defer fu.Close()
	target, _ := url.Parse(orp.url())
	frp := httptest.NewServer(referenceProxy(target, trusted))
	defer frp.Close()
	var res diffResult
	var wg sync.WaitGroup
	wg.Go(func() { res.cu = sendRaw(fu.Listener.Addr().String(), req) })
	wg.Go(func() { res.crp = sendRaw(frp.Listener.Addr().String(), req) })
	wg.Wait()
	res.ru, res.rrp = ou.records(), orp.records()
	// Each origin is at its own address: the Host each got is "origin"
	// when it is its own.
	for i := range res.ru {
		res.ru[i].host = strings.ReplaceAll(res.ru[i].host, ou.ln.Addr().String(), "origin")
	}
	for i := range res.rrp {
		res.rrp[i].host = strings.ReplaceAll(res.rrp[i].host, orp.ln.Addr().String(), "origin")
	}
	return res
}

// TestForwarderAgreesWithReverseProxy: see the top of this file. It runs
// each case from an untrusted peer and from a trusted one, every case at
// once (most of the time is waiting to see that nothing more comes).
func TestForwarderAgreesWithReverseProxy(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	modes := []struct {
		name    string
		trusted []netip.Prefix
	}{{"untrusted peer", nil}, {"trusted peer", loopback}}
	results := make([][]diffResult, len(modes))
	var wg sync.WaitGroup
	for m, mode := range modes {
		results[m] = make([]diffResult, len(diffCases))
		for i, tc := range diffCases {
			wg.Go(func() { results[m][i] = runDiffCase(t, strings.Join(tc.req, "\r\n"), mode.trusted) })
		}
	}
	wg.Wait()
	for m, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			for i, tc := range diffCases {
				t.Run(tc.name, func(t *testing.T) {
					r := results[m][i]
					if len(r.ru) == 0 && len(r.cu) == 0 {
						t.Fatal("no answer from usher")
					}
					compareRecords(t, r.ru, r.rrp, r.cu, r.crp)
				})
			}
		})
	}
}

// compareRecords reports where the origins' records differ but for the
// intended differences.
func compareRecords(t *testing.T, ru, rrp []diffRecord, cu, crp []int) {
	t.Helper()
	if len(ru) != len(rrp) {
		t.Errorf("usher's origin got %d requests (answers %v), ReverseProxy's %d (answers %v):\nusher: %s\nreverse proxy: %s",
			len(ru), cu, len(rrp), crp, describe(ru), describe(rrp))
		return
	}
	for i := range ru {
		u, p := ru[i], rrp[i]
		field := func(name string, a, b any) {
			if fmt.Sprint(a) != fmt.Sprint(b) {
				t.Errorf("request %d: %s: usher's origin got %q, ReverseProxy's %q", i, name, fmt.Sprint(a), fmt.Sprint(b))
			}
		}
		field("parse error", u.err, p.err)
		field("method", u.method, p.method)
		field("target", u.target, p.target)
		field("host", u.host, p.host)
		field("proto", u.proto, p.proto)
		field("content length", u.contentLength, p.contentLength)
		field("transfer encoding", u.transferEncoding, p.transferEncoding)
		field("body", u.body, p.body)
		if fmt.Sprint(u.trailer) != fmt.Sprint(p.trailer) {
			if sameKeys(u.trailer, p.trailer) && emptyValues(p.trailer) {
				t.Logf("request %d: trailer: usher %v, ReverseProxy %v: intended (ReverseProxy announces the request's trailers but sends them empty; usher passes them on)", i, u.trailer, p.trailer)
			} else {
				t.Errorf("request %d: trailer: usher's origin got %v, ReverseProxy's %v", i, u.trailer, p.trailer)
			}
		}
		keys := map[string]bool{}
		for k := range u.header {
			keys[k] = true
		}
		for k := range p.header {
			keys[k] = true
		}
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			for k := range keys {
				if !yield(k) {
					return
				}
			}
		}) {
			a, inU := u.header[k]
			b, inP := p.header[k]
			if inU && inP && slices.Equal(a, b) {
				continue
			}
			if why, ok := intendedDiff(k, inU); ok {
				t.Logf("request %d: %s: usher %q, ReverseProxy %q: intended (%s)", i, k, a, b, why)
				continue
			}
			t.Errorf("request %d: header %s: usher's origin got %q, ReverseProxy's %q", i, k, a, b)
		}
	}
}

func describe(rs []diffRecord) string {
	var b strings.Builder
	for _, r := range rs {
		if r.err != "" {
			fmt.Fprintf(&b, "[error %s] ", r.err)
			continue
		}
		fmt.Fprintf(&b, "[%s %s host=%s cl=%s te=%v] ", r.method, r.target, r.host, strconv.FormatInt(r.contentLength, 10), r.transferEncoding)
	}
	return b.String()
}

func sameKeys(a, b http.Header) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			return false
		}
	}
	return true
}

func emptyValues(h http.Header) bool {
	for _, v := range h {
		if len(v) > 0 {
			return false
		}
	}
	return true
}
