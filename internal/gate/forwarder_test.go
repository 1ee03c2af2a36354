package gate

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/server"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// The proxy core's tests: each behaviour of forwarder.go over real
// connections (a real origin, usher behind a real listener, clients that
// write raw HTTP/1.1 where the exact bytes matter).

// proxyStack is an origin, a gate admitting everyone in front of it with
// admission tokens (header X-Site-Pass), and usher's listener.
type proxyStack struct {
	origin *httptest.Server
	front  *httptest.Server
	signer *token.Signer
	dec    *fakeDecider
	logw   *lockedWriter // the gate's logs, in a bytes.Buffer
}

// logs returns the gate's logs so far.
func (s *proxyStack) logs() string {
	s.logw.mu.Lock()
	defer s.logw.mu.Unlock()
	return s.logw.w.(*bytes.Buffer).String()
}

func newProxyStack(t *testing.T, h http.HandlerFunc) *proxyStack {
	t.Helper()
	s := newProxyStackUnstarted(t, h)
	s.origin.Start()
	return s
}

// newProxyStackUnstarted is newProxyStack with the origin not started yet
// (its server's settings may still change).
func newProxyStackUnstarted(t *testing.T, h http.HandlerFunc) *proxyStack {
	t.Helper()
	k, err := ticket.GenerateKey("t1")
	if err != nil {
		t.Fatal(err)
	}
	signer, err := token.New([]usher.Key{k}, token.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &proxyStack{origin: httptest.NewUnstartedServer(h), signer: signer, dec: &fakeDecider{}, logw: &lockedWriter{w: &bytes.Buffer{}}}
	t.Cleanup(s.origin.Close)
	originURL := "http://" + s.origin.Listener.Addr().String()
	g, _ := newGate(t, Options{Rooms: []*usher.Room{testRoom("sale", "/", originURL)}, Decider: s.dec,
		Tokens: &Tokens{Signer: signer, Header: "x-site-pass"},
		Logger: slog.New(slog.NewJSONHandler(s.logw, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	s.front = httptest.NewServer(server.RequestID(nil, server.Recover(nil, g)))
	t.Cleanup(s.front.Close)
	return s
}

// raw sends the raw request text req (lines joined with CRLF) on a new
// connection and returns the connection's reader, ready for the answer.
func (s *proxyStack) raw(t *testing.T, req ...string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", s.front.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, strings.Join(req, "\r\n")); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

func readAnswer(t *testing.T, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	return resp, string(body)
}

// recordOrigin returns a handler that sends each request it gets (header
// cloned) on the channel and answers "ok".
func recordOrigin(got chan<- *http.Request) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := r.Clone(context.Background())
		c.Body = io.NopCloser(bytes.NewReader(body))
		got <- c
		_, _ = io.WriteString(w, "ok")
	}
}

// TestPassHopByHop: the hop-by-hop headers (the fixed list and those the
// Connection header names) are removed both ways; "TE: trailers" is kept
// as "Te: trailers"; a Connection header naming usher's own headers does
// not remove them.
func TestPassHopByHop(t *testing.T) {
	got := make(chan *http.Request, 1)
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Clone(context.Background())
		h := w.Header()
		h.Set("Connection", "X-Private, keep-alive")
		h.Set("X-Private", "origin only")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Authenticate", "Basic")
		h.Set("Upgrade", "h2c")
		h.Set("X-Public", "yes")
		_, _ = io.WriteString(w, "ok")
	})
	_, br := s.raw(t,
		"GET /item HTTP/1.1",
		"Host: shop.example",
		"Connection: keep-alive, X-Secret, x-site-pass, X-Forwarded-For, X-Request-Id",
		"X-Secret: hop",
		"Keep-Alive: timeout=9",
		"Proxy-Connection: keep-alive",
		"Proxy-Authorization: Basic dXNlcjpwYXNz",
		"TE: trailers, deflate",
		"Upgrade: h2c",
		"X-Kept: end to end",
		"", "")
	resp, body := readAnswer(t, br, "GET")
	if resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	r := <-got
	for _, k := range []string{"Connection", "X-Secret", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Upgrade"} {
		if v, ok := r.Header[k]; ok {
			t.Errorf("origin got %s: %q", k, v)
		}
	}
	if v := r.Header.Values("Te"); len(v) != 1 || v[0] != "trailers" {
		t.Errorf("origin Te = %q, want [trailers]", v)
	}
	if r.Header.Get("X-Kept") != "end to end" {
		t.Errorf("origin X-Kept = %q", r.Header.Get("X-Kept"))
	}
	if r.Header.Get("X-Forwarded-For") != "127.0.0.1" || r.Header.Get("X-Request-Id") == "" {
		t.Errorf("origin X-Forwarded-For %q, X-Request-Id %q: usher's own headers must survive Connection",
			r.Header.Get("X-Forwarded-For"), r.Header.Get("X-Request-Id"))
	}
	if _, err := s.signer.Verifier().Verify(r.Header.Get("X-Site-Pass"), "sale", testNow); err != nil {
		t.Errorf("origin's admission token: %v (%q)", err, r.Header.Get("X-Site-Pass"))
	}
	for _, k := range []string{"X-Private", "Keep-Alive", "Proxy-Authenticate", "Upgrade"} {
		if v, ok := resp.Header[k]; ok {
			t.Errorf("client got %s: %q", k, v)
		}
	}
	if resp.Header.Get("X-Public") != "yes" {
		t.Errorf("client X-Public = %q", resp.Header.Get("X-Public"))
	}
}

// TestPassClientCopiesOfUsherHeaders: no header a client sends under the
// name of the admission token, an X-Usher-* header or a forwarding header
// reaches the origin, whatever its case and "_" for "-" (CGI-style
// origins read X_Site_Pass as X-Site-Pass); only usher's token does, once.
func TestPassClientCopiesOfUsherHeaders(t *testing.T) {
	got := make(chan *http.Request, 1)
	s := newProxyStack(t, recordOrigin(got))
	_, br := s.raw(t,
		"GET /item HTTP/1.1",
		"Host: shop.example",
		"X-Site-Pass: forged-1",
		"x-site-pass: forged-2",
		"X_Site_Pass: forged-3",
		"x-SITE_pass: forged-4",
		"X-Usher-Admission: forged-5",
		"X_Usher_Visitor: forged-6",
		"X-Forwarded-For: 6.6.6.6",
		"X_Forwarded_For: 6.6.6.6",
		"X-Forwarded_Host: evil.example",
		"Forwarded: for=6.6.6.6",
		"X-Site-Passport: kept",
		"", "")
	if resp, body := readAnswer(t, br, "GET"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	r := <-got
	var pass []string
	for k, v := range r.Header {
		f := foldName(k)
		switch {
		case f == "x-site-pass":
			pass = append(pass, v...)
		case strings.HasPrefix(f, "x-usher-"), f == "forwarded", f == "x-forwarded-host" && v[0] != "shop.example":
			t.Errorf("origin got %s: %q", k, v)
		case f == "x-forwarded-for" && (k != "X-Forwarded-For" || len(v) != 1 || v[0] != "127.0.0.1"):
			t.Errorf("origin got %s: %q", k, v)
		}
	}
	if len(pass) != 1 {
		t.Fatalf("origin got %d admission tokens: %q", len(pass), pass)
	}
	if _, err := s.signer.Verifier().Verify(pass[0], "sale", testNow); err != nil {
		t.Errorf("origin's admission token is not usher's: %v (%q)", err, pass[0])
	}
	if r.Header.Get("X-Site-Passport") != "kept" {
		t.Errorf("a longer name was removed: %q", r.Header.Get("X-Site-Passport"))
	}
}

// TestPassSmuggling: the request the origin gets is framed by usher's
// transport from the request as usher parsed it, never from the client's
// framing headers: a request with conflicting Content-Length and
// Transfer-Encoding is refused or carries exactly the body usher read,
// and the origin never gets a request usher did not decide.
func TestPassSmuggling(t *testing.T) {
	got := make(chan *http.Request, 10)
	s := newProxyStack(t, recordOrigin(got))
	smuggled := "GET /smuggled HTTP/1.1\r\nHost: shop.example\r\n\r\n"
	cases := map[string][]string{
		"CL and TE": {"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: " + strconv.Itoa(5+len(smuggled)),
			"Transfer-Encoding: chunked", "", "0", "", smuggled},
		"TE and CL": {"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: chunked",
			"Content-Length: 3", "", "0", "", smuggled},
		"two CLs": {"POST /a HTTP/1.1", "Host: shop.example", "Content-Length: 0", "Content-Length: " + strconv.Itoa(len(smuggled)),
			"", smuggled},
		"TE obfuscated": {"POST /a HTTP/1.1", "Host: shop.example", "Transfer-Encoding: xchunked", "Content-Length: 0",
			"", smuggled},
		"TE in Connection": {"POST /a HTTP/1.1", "Host: shop.example", "Connection: Transfer-Encoding, Content-Length",
			"Content-Length: 4", "", "abcd"},
	}
	for name, req := range cases {
		t.Run(name, func(t *testing.T) {
			before := len(s.dec.calls())
			c, br := s.raw(t, req...)
			answers := 0
			for {
				// The answers to what was sent come within a second
				// (usher answers each at once); then the reads stop.
				_ = c.SetReadDeadline(time.Now().Add(time.Second))
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					break
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answers++
				if resp.StatusCode != 200 && resp.StatusCode != 400 && resp.StatusCode != 501 {
					t.Errorf("status %d; logs: %s", resp.StatusCode, s.logs())
				}
			}
			decided := len(s.dec.calls()) - before
			var seen []*http.Request
		drain:
			for {
				select {
				case r := <-got:
					seen = append(seen, r)
				case <-time.After(200 * time.Millisecond):
					break drain
				}
			}
			if len(seen) > decided {
				t.Errorf("origin got %d requests, usher decided %d", len(seen), decided)
			}
			if len(seen) > answers {
				t.Errorf("origin got %d requests, the client %d answers", len(seen), answers)
			}
			for _, r := range seen {
				body, _ := io.ReadAll(r.Body)
				if r.URL.Path == "/smuggled" && decided < 2 {
					t.Errorf("a smuggled request reached the origin")
				}
				if len(r.TransferEncoding) > 0 && r.ContentLength >= 0 {
					t.Errorf("origin got TE %q with Content-Length %d", r.TransferEncoding, r.ContentLength)
				}
				if r.ContentLength >= 0 && int64(len(body)) != r.ContentLength {
					t.Errorf("origin body %d bytes, Content-Length %d", len(body), r.ContentLength)
				}
			}
		})
	}
}

// TestPassStreams: a body of unknown length is passed on as it comes
// (flushed after each read), and so are its headers before it.
func TestPassStreams(t *testing.T) {
	release := make(chan struct{})
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "first\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		_, _ = io.WriteString(w, "second\n")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.front.URL+"/live", nil)
	resp, err := http.DefaultClient.Do(req) // returns with the headers, before any body
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ContentLength != -1 {
		t.Errorf("Content-Length %d for a streamed body", resp.ContentLength)
	}
	br := bufio.NewReader(resp.Body)
	release <- struct{}{}
	if line, err := br.ReadString('\n'); line != "first\n" {
		t.Fatalf("first line %q, %v (not flushed?)", line, err)
	}
	release <- struct{}{}
	if line, err := br.ReadString('\n'); line != "second\n" {
		t.Fatalf("second line %q, %v", line, err)
	}
	if ctx.Err() != nil {
		t.Error("the stream came only after the deadline")
	}
}

// TestPassTrailers: trailers the origin announced and trailers it did not
// both reach the client.
func TestPassTrailers(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Sum")
		_, _ = io.WriteString(w, "body")
		w.(http.Flusher).Flush()
		w.Header().Set("X-Sum", "42")
		w.Header().Set(http.TrailerPrefix+"X-Late", "late")
	})
	resp, err := http.Get(s.front.URL + "/t")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(body) != "body" {
		t.Fatalf("body %q, %v", body, err)
	}
	if resp.Trailer.Get("X-Sum") != "42" || resp.Trailer.Get("X-Late") != "late" {
		t.Errorf("trailers %v", resp.Trailer)
	}
}

// TestPassUpgrade: a request that switches protocols (here a toy echo
// protocol, as a WebSocket does) is tunnelled both ways, with usher's
// headers, not the client's copies.
func TestPassUpgrade(t *testing.T) {
	got := make(chan http.Header, 1)
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		if !strings.EqualFold(r.Header.Get("Upgrade"), "echo") {
			http.Error(w, "upgrade to echo", 426)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		_ = brw.Flush()
		line, _ := brw.ReadString('\n')
		_, _ = brw.WriteString("echo " + line)
		_ = brw.Flush()
	})
	c, br := s.raw(t,
		"GET /ws HTTP/1.1",
		"Host: shop.example",
		"Connection: Upgrade",
		"Upgrade: echo",
		"X_Site_Pass: forged",
		"", "")
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := br.ReadString('\n'); line != "echo ping\n" {
		t.Errorf("through the tunnel: %q, %v", line, err)
	}
	h := <-got
	for k := range h {
		if foldName(k) == "x-site-pass" && k != "X-Site-Pass" {
			t.Errorf("origin got the client's %s", k)
		}
	}
	if _, err := s.signer.Verifier().Verify(h.Get("X-Site-Pass"), "sale", testNow); err != nil {
		t.Errorf("origin's admission token: %v", err)
	}
}

// TestPassClientHangUp: a client that hangs up cancels the origin's
// request, and is logged as such (debug), not as an origin failure.
func TestPassClientHangUp(t *testing.T) {
	started, canceled := make(chan struct{}), make(chan struct{})
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		select {
		case <-r.Context().Done():
			close(canceled)
		case <-time.After(20 * time.Second):
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", s.front.URL+"/slow", nil)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the origin")
	}
	cancel()
	select {
	case <-canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the origin's request was not canceled when the client hung up")
	}
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(s.logs(), "origin request failed") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if logs := s.logs(); !strings.Contains(logs, `"level":"DEBUG","msg":"origin request failed"`) {
		t.Errorf("a hang-up must be logged at debug level: %s", logs)
	}
}

// TestPassOriginErrors: an origin that closes the connection without an
// answer gets the visitor a 502 (with their ticket); one that stops in the
// middle of its body gets the client's connection aborted, never a
// seemingly whole answer.
func TestPassOriginErrors(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		if r.URL.Path == "/cut" {
			_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten b")
			_ = brw.Flush()
		}
	})
	t.Run("no answer", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.front.URL+"/none", nil)
		req.Header.Set("Accept", "text/html")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(body), "The site did not answer") {
			t.Errorf("got %d %q", resp.StatusCode, body)
		}
		var ticketKept bool
		for _, c := range resp.Cookies() {
			ticketKept = ticketKept || c.Name == "__usher_wr"
		}
		if !ticketKept {
			t.Error("an admitted visitor's ticket must survive a 502")
		}
	})
	t.Run("body cut short", func(t *testing.T) {
		resp, err := http.Get(s.front.URL + "/cut")
		if err != nil {
			return // aborted before the headers left: no answer at all
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil {
			t.Errorf("the client read %q as a whole answer", body)
		}
	})
}

// TestPassLargeBodies: 16 MB each way, streamed, byte for byte.
func TestPassLargeBodies(t *testing.T) {
	const size = 16 << 20
	pattern := func(n int) io.Reader {
		return io.LimitReader(&counter{}, int64(n))
	}
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			h := sha256.New()
			n, err := io.Copy(h, r.Body)
			fmt.Fprintf(w, "%d %x %v", n, h.Sum(nil), err)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(size))
		_, _ = io.Copy(w, pattern(size))
	})
	want := sha256.New()
	_, _ = io.Copy(want, pattern(size))
	sum := fmt.Sprintf("%x", want.Sum(nil))

	resp, err := http.Post(s.front.URL+"/up", "application/octet-stream", pattern(size)) // chunked: length unknown
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != fmt.Sprintf("%d %s <nil>", size, sum) {
		t.Errorf("upload: origin read %q", body)
	}

	resp, err = http.Get(s.front.URL + "/down")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || n != size || fmt.Sprintf("%x", h.Sum(nil)) != sum || resp.ContentLength != size {
		t.Errorf("download: %d bytes (Content-Length %d), %v, sum match %v", n, resp.ContentLength, err, fmt.Sprintf("%x", h.Sum(nil)) == sum)
	}
}

// counter is an endless reader of a repeating byte pattern.
type counter struct{ i byte }

func (c *counter) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.i
		c.i = c.i*7 + 1
	}
	return len(p), nil
}

// TestPassExpectContinue: a client that waits for 100 Continue before its
// body gets it, and its body reaches the origin whole.
func TestPassExpectContinue(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		fmt.Fprintf(w, "%d", n)
	})
	tr := &http.Transport{ExpectContinueTimeout: 10 * time.Second} // it waits for the 100
	defer tr.CloseIdleConnections()
	var continued bool
	var mu sync.Mutex
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got100Continue: func() { mu.Lock(); continued = true; mu.Unlock() },
	})
	body := bytes.Repeat([]byte("x"), 1<<20)
	req, _ := http.NewRequestWithContext(ctx, "PUT", s.front.URL+"/upload", bytes.NewReader(body))
	req.Header.Set("Expect", "100-continue")
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if resp.StatusCode != 200 || string(got) != strconv.Itoa(len(body)) || !continued {
		t.Errorf("got %d %q, 100 Continue %v", resp.StatusCode, got, continued)
	}
	if time.Since(start) > 9*time.Second {
		t.Error("the client waited out its timeout: no 100 Continue in time")
	}
}

// TestPassHead: a HEAD answer carries the origin's Content-Length and no
// body, and the connection serves the next request.
func TestPassHead(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1234")
		if r.Method != "HEAD" {
			_, _ = w.Write(bytes.Repeat([]byte("y"), 1234))
		}
	})
	// Two requests on one connection: had usher sent a body after the
	// HEAD answer, the GET's answer would be read from it.
	_, br := s.raw(t,
		"HEAD /h HTTP/1.1", "Host: shop.example", "",
		"GET /h HTTP/1.1", "Host: shop.example", "", "",
	)
	resp, body := readAnswer(t, br, "HEAD")
	if resp.StatusCode != 200 || resp.ContentLength != 1234 || body != "" {
		t.Fatalf("HEAD: %d, Content-Length %d, body %q", resp.StatusCode, resp.ContentLength, body)
	}
	resp, body = readAnswer(t, br, "GET")
	if resp.StatusCode != 200 || body != strings.Repeat("y", 1234) {
		t.Fatalf("GET after HEAD: %d, body %q", resp.StatusCode, body)
	}
}

// TestPassEarlyHints: a 103 reaches the client with its own headers; the
// final answer keeps the ticket cookie.
func TestPassEarlyHints(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		_, _ = io.WriteString(w, "page")
	})
	var hints []textproto.MIMEHeader
	var mu sync.Mutex
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			mu.Lock()
			defer mu.Unlock()
			if code == http.StatusEarlyHints {
				hints = append(hints, h)
			}
			return nil
		},
	})
	req, _ := http.NewRequestWithContext(ctx, "GET", s.front.URL+"/", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if len(hints) != 1 || hints[0].Get("Link") != "</app.css>; rel=preload; as=style" {
		t.Errorf("early hints %v", hints)
	} else if hints[0].Get("Set-Cookie") != "" {
		t.Errorf("the ticket went out with the 103: %v", hints[0])
	}
	var ticketKept bool
	for _, c := range resp.Cookies() {
		ticketKept = ticketKept || c.Name == "__usher_wr"
	}
	if resp.StatusCode != 200 || string(body) != "page" || !ticketKept || resp.Header.Get("X-Request-Id") == "" {
		t.Errorf("final answer %d %q, ticket %v, headers %v", resp.StatusCode, body, ticketKept, resp.Header)
	}
}

// TestPassQuery: a query the origin could read differently from usher
// (";" separators, bad escapes) is re-encoded; a clean one is passed as
// it is.
func TestPassQuery(t *testing.T) {
	got := make(chan *http.Request, 3)
	s := newProxyStack(t, recordOrigin(got))
	for q, want := range map[string]string{
		"a=1&b=%41+c":      "a=1&b=%41+c",
		"a=1;admin=true":   "",
		"x=%zz&y=2":        "y=2",
		"z=1&z=2&flag":     "z=1&z=2&flag",
		"route=/sale%2f..": "route=/sale%2f..",
	} {
		resp, err := http.Get(s.front.URL + "/q?" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if r := <-got; r.URL.RawQuery != want {
			t.Errorf("query %q reached the origin as %q, want %q", q, r.URL.RawQuery, want)
		}
	}
}

// connCounter counts the connections an origin accepts.
func connCounter(s *httptest.Server) *atomic.Int64 {
	var n atomic.Int64
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			n.Add(1)
		}
	}
	return &n
}

// TestPassReusesConnections: GETs one after the other go over one
// connection to the origin, HEADs and 304s (no body) too; an answer the
// client stopped reading is not reused, and the next request still gets
// through.
func TestPassReusesConnections(t *testing.T) {
	s := newProxyStackUnstarted(t, func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/big":
			w.Header().Set("Content-Length", strconv.Itoa(8<<20))
			_, _ = w.Write(make([]byte, 8<<20))
		case r.URL.Path == "/304":
			w.WriteHeader(http.StatusNotModified)
		case r.URL.Path == "/chunked":
			_, _ = io.WriteString(w, "a")
			w.(http.Flusher).Flush()
			_, _ = io.WriteString(w, "b")
		default:
			_, _ = io.WriteString(w, "ok")
		}
	})
	conns := connCounter(s.origin)
	s.origin.Start()
	for i, path := range []string{"/a", "/b", "/304", "/chunked", "/c"} {
		for _, method := range []string{"GET", "HEAD"} {
			req, _ := http.NewRequest(method, s.front.URL+path, nil)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 && resp.StatusCode != 304 {
				t.Fatalf("%s %s: %d", method, path, resp.StatusCode)
			}
		}
		if n := conns.Load(); n != 1 {
			t.Fatalf("after %d paths: %d connections to the origin, want 1", i+1, n)
		}
	}
	// A client that reads 1 KB of 8 MB and hangs up.
	c, br := s.raw(t, "GET /big HTTP/1.1", "Host: shop.example", "", "")
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.ReadFull(resp.Body, make([]byte, 1024))
	c.Close()
	for range 3 {
		resp, err := http.Get(s.front.URL + "/after")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "ok" {
			t.Fatalf("after a hang-up: %d %q", resp.StatusCode, body)
		}
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections to the origin, want 2 (the cut one replaced once)", n)
	}
}

// TestPassStaleConnection: an origin that closes idle connections without
// telling (its idle timeout) costs the next visitor nothing: the request
// is sent again on a new connection.
func TestPassStaleConnection(t *testing.T) {
	s := newProxyStackUnstarted(t, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	s.origin.Config.IdleTimeout = 50 * time.Millisecond
	conns := connCounter(s.origin)
	s.origin.Start()
	for i := range 3 {
		resp, err := http.Get(s.front.URL + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		time.Sleep(300 * time.Millisecond) // the origin closes the idle connection
	}
	if n := conns.Load(); n != 3 {
		t.Errorf("%d connections to the origin, want 3 (each closed while idle)", n)
	}
}

// TestPassOriginMisbehaves: an answer with bytes after its body, or with
// headers over 1 MB, is not trusted: the connection is not reused (the
// next request gets its own answer, not the leftover bytes), and
// oversized headers get the visitor a 502.
func TestPassOriginMisbehaves(t *testing.T) {
	s := newProxyStack(t, func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer c.Close()
		switch r.URL.Path {
		case "/extra":
			_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
		case "/huge":
			_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("a", 2<<20) + "\r\n\r\n")
		default:
			_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nplain")
		}
		_ = brw.Flush()
		// Keep the connection open a moment, as a keep-alive origin would.
		time.Sleep(100 * time.Millisecond)
	})
	get := func(path string) (int, string) {
		resp, err := http.Get(s.front.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	if code, body := get("/extra"); code != 200 || body != "ok" {
		t.Errorf("/extra: %d %q", code, body)
	}
	if code, body := get("/plain"); code != 200 || body != "plain" {
		t.Errorf("after leftover bytes: %d %q, want the origin's own answer", code, body)
	}
	if code, _ := get("/huge"); code != http.StatusBadGateway {
		t.Errorf("2 MB of headers: %d, want 502", code)
	}
}
