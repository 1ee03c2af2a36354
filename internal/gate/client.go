package gate

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/textproto"
	"sync"
	"time"
)

// originClient is a lean HTTP/1.1 client for the requests that make most
// of an admitted visitor's traffic: GET and HEAD without a body to a plain
// http origin. http.Transport runs every request through two goroutines of
// its own (one writes the request, one reads the answer) and hands it
// between them and the caller over channels; originClient writes the
// request and reads the answer in the caller's goroutine, on a connection
// it keeps idle for the next request. Everything else (bodies, other
// methods, https origins, origins behind an HTTP proxy from the
// environment) goes through http.Transport.
//
// What it keeps of http.Transport's behaviour for these requests: a dial
// timeout and TCP keep-alives (net.Dialer as http.DefaultTransport), up to
// maxIdle idle connections per origin, connections idle longer than
// idleTimeout closed (a timer sweeps them while any is idle), one retry on a
// new connection when a reused one fails before any answer (an origin
// that closed it while idle; GET and HEAD may be sent twice), 1xx answers
// to the request's httptrace hook, a bound on the answer's header size,
// the request's context cancelling the dial, the write and the read, and
// a connection reused only once its answer was read to the end with
// nothing after it.
type originClient struct {
	dialer      net.Dialer
	maxIdle     int
	idleTimeout time.Duration

	mu    sync.Mutex
	idle  map[string][]*originConn // by host:port, most recent last
	sweep *time.Timer              // closes connections idle too long; nil when none is idle
}

// maxOriginHeaderBytes bounds an origin's answer headers (http.Transport's
// default is 10 MB; usher takes a client's up to 64 KB).
const maxOriginHeaderBytes = 1 << 20

func newOriginClient(maxIdle int, idleTimeout time.Duration) *originClient {
	return &originClient{
		dialer:      net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		maxIdle:     maxIdle,
		idleTimeout: idleTimeout,
		idle:        map[string][]*originConn{},
	}
}

// originConn is a connection to an origin.
type originConn struct {
	c         net.Conn
	lr        limitedReader
	br        *bufio.Reader
	bw        *bufio.Writer
	key       string
	idleSince time.Time
}

// limitedReader reads from c at most n bytes while n >= 0 (the answer's
// headers), without limit when n < 0 (its body).
type limitedReader struct {
	c net.Conn
	n int64
}

var errHeaderTooLarge = errors.New("the origin's answer headers are over 1 MB")

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n == 0 {
		return 0, errHeaderTooLarge
	}
	if l.n > 0 && int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.c.Read(p)
	if l.n > 0 {
		l.n -= int64(n)
	}
	return n, err
}

// leanRequest reports whether req may go through originClient.
func leanRequest(req *http.Request) bool {
	return (req.Method == http.MethodGet || req.Method == http.MethodHead) && req.Body == nil &&
		req.URL.Scheme == "http" && req.URL.Host != ""
}

// hostPort returns u's host:port, port 80 when it has none.
func hostPort(host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(trimBrackets(host), "80")
}

func trimBrackets(h string) string {
	if len(h) > 1 && h[0] == '[' && h[len(h)-1] == ']' {
		return h[1 : len(h)-1]
	}
	return h
}

// informer takes 1xx answers.
type informer interface {
	got1xx(code int, header textproto.MIMEHeader) error
}

// RoundTrip sends a leanRequest and returns the origin's answer, whose
// body must be closed; 1xx answers go to the request's httptrace hook.
func (cl *originClient) RoundTrip(req *http.Request) (*http.Response, error) {
	return cl.roundTrip(req, nil)
}

// roundTrip is RoundTrip with 1xx answers to inf (nil: to the request's
// httptrace hook).
func (cl *originClient) roundTrip(req *http.Request, inf informer) (*http.Response, error) {
	ctx := req.Context()
	key := hostPort(req.URL.Host)
	for attempt := 0; ; attempt++ {
		pc, reused, err := cl.get(ctx, key)
		if err != nil {
			return nil, err
		}
		resp, err := cl.do(pc, req, inf)
		if err == nil {
			return resp, nil
		}
		pc.c.Close()
		if !reused || attempt > 0 || ctx.Err() != nil || errors.Is(err, errHeaderTooLarge) {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		// A reused connection the origin closed while it was idle: once
		// more on a new one.
	}
}

// get returns an idle connection to key, or a new one.
func (cl *originClient) get(ctx context.Context, key string) (*originConn, bool, error) {
	now := time.Now()
	cl.mu.Lock()
	for conns := cl.idle[key]; len(conns) > 0; conns = cl.idle[key] {
		pc := conns[len(conns)-1]
		conns[len(conns)-1] = nil
		cl.idle[key] = conns[:len(conns)-1]
		if now.Sub(pc.idleSince) <= cl.idleTimeout {
			cl.mu.Unlock()
			return pc, true, nil
		}
		pc.c.Close()
	}
	cl.mu.Unlock()
	c, err := cl.dialer.DialContext(ctx, "tcp", key)
	if err != nil {
		return nil, false, err
	}
	pc := &originConn{c: c, key: key}
	pc.lr.c, pc.lr.n = c, -1
	pc.br = bufio.NewReaderSize(&pc.lr, 4<<10)
	pc.bw = bufio.NewWriterSize(c, 4<<10)
	return pc, false, nil
}

// put keeps pc for the next request to its origin, or closes it.
func (cl *originClient) put(pc *originConn) {
	if pc.br.Buffered() > 0 {
		// Bytes after the answer: not a connection to trust.
		pc.c.Close()
		return
	}
	pc.idleSince = time.Now()
	cl.mu.Lock()
	if conns := cl.idle[pc.key]; len(conns) < cl.maxIdle {
		cl.idle[pc.key] = append(conns, pc)
		if cl.sweep == nil {
			cl.sweep = time.AfterFunc(cl.idleTimeout, cl.closeStale)
		}
		cl.mu.Unlock()
		return
	}
	cl.mu.Unlock()
	pc.c.Close()
}

// closeStale closes the connections idle longer than idleTimeout, and
// comes again while any connection is idle.
func (cl *originClient) closeStale() {
	now := time.Now()
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for k, conns := range cl.idle {
		// Oldest first: the stale ones are a prefix.
		i := 0
		for i < len(conns) && now.Sub(conns[i].idleSince) > cl.idleTimeout {
			conns[i].c.Close()
			i++
		}
		if i == len(conns) {
			delete(cl.idle, k)
			continue
		}
		cl.idle[k] = append(conns[:0], conns[i:]...)
		clear(conns[len(conns)-i:])
	}
	cl.sweep = nil
	if len(cl.idle) > 0 {
		cl.sweep = time.AfterFunc(cl.idleTimeout, cl.closeStale)
	}
}

// closeIdle closes every idle connection.
func (cl *originClient) closeIdle() {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for k, conns := range cl.idle {
		for _, pc := range conns {
			pc.c.Close()
		}
		delete(cl.idle, k)
	}
	if cl.sweep != nil {
		cl.sweep.Stop()
		cl.sweep = nil
	}
}

// aLongTimeAgo is a deadline in the past: it makes a connection's pending
// reads and writes fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// do sends req on pc and reads its answer's headers.
func (cl *originClient) do(pc *originConn, req *http.Request, inf informer) (*http.Response, error) {
	ctx := req.Context()
	stop := context.AfterFunc(ctx, func() { _ = pc.c.SetDeadline(aLongTimeAgo) })
	if err := req.Write(pc.bw); err != nil {
		stop()
		return nil, err
	}
	if err := pc.bw.Flush(); err != nil {
		stop()
		return nil, err
	}
	pc.lr.n = maxOriginHeaderBytes
	for n1xx := 0; ; {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			stop()
			return nil, err
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			if n1xx++; n1xx > 5 {
				stop()
				return nil, errors.New("the origin sent too many 1xx answers")
			}
			got1xx := func(int, textproto.MIMEHeader) error { return nil }
			if inf != nil {
				got1xx = inf.got1xx
			} else if trace := httptrace.ContextClientTrace(ctx); trace != nil && trace.Got1xxResponse != nil {
				got1xx = trace.Got1xxResponse
			}
			if err := got1xx(resp.StatusCode, textproto.MIMEHeader(resp.Header)); err != nil {
				stop()
				return nil, err
			}
			continue
		}
		pc.lr.n = -1
		resp.Body = &connBody{cl: cl, pc: pc, body: resp.Body, stop: stop, reuse: !resp.Close,
			eof: resp.Body == http.NoBody}
		return resp, nil
	}
}

// connBody is an answer's body: its connection goes back to the idle ones
// once it was read to the end and closed, in time.
type connBody struct {
	cl    *originClient
	pc    *originConn
	body  io.ReadCloser
	stop  func() bool
	reuse bool // the answer allows the connection to be reused
	eof   bool
	done  bool
}

func (b *connBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("read after close")
	}
	n, err := b.body.Read(p)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

func (b *connBody) Close() error {
	if b.done {
		return nil
	}
	b.done = true
	// In time: the request's context did not end while the answer came.
	inTime := b.stop()
	if b.eof && b.reuse && inTime {
		b.cl.put(b.pc)
		return nil
	}
	// Not read to the end (the client went away, or the copy failed):
	// the rest is not worth reading.
	return b.pc.c.Close()
}
