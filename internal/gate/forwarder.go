package gate

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/textproto"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/usherhq/usher/internal/server"
)

// usher's own proxy core. It does what httputil.ReverseProxy does for a
// request that is not a protocol upgrade (those still go through
// ReverseProxy, see forward), with less work per request: the outgoing
// request is one shallow copy whose header map is built in one pass over
// the client's (hop-by-hop, forwarding and usher's own headers left out,
// the values shared, not copied), and the origin's response headers are
// handed over as they are instead of added one value at a time.
//
// What it keeps of ReverseProxy, each with its test in forwarder_test.go:
//   - hop-by-hop headers (RFC 9110, 7.6.1: Connection and the headers it
//     names, Proxy-Connection, Keep-Alive, Proxy-Authenticate,
//     Proxy-Authorization, TE, Trailer, Transfer-Encoding, Upgrade) are
//     removed both ways; "TE: trailers" is passed on when the client sent
//     it; the framing of the outgoing request is the transport's, from the
//     request as net/http parsed it, never from the client's headers;
//   - the client's Forwarded and X-Forwarded-For, -Host and -Proto are
//     replaced by usher's (earlier hops kept only from a trusted peer);
//   - query strings the origin could read differently (";", bad escapes,
//     too many parameters) are re-encoded;
//   - bodies stream both ways through the gate's buffer pool; responses of
//     unknown length and event streams are flushed as they come;
//   - 1xx answers (103 Early Hints) are passed on; trailers are passed on,
//     announced or not;
//   - a client that hangs up cancels the origin's request (the request's
//     context); an origin that fails before answering gets the 502 page,
//     one that fails in the middle of its body aborts the client's
//     connection (http.ErrAbortHandler), so that the client never takes a
//     truncated answer for a whole one.
//
// And it adds: header names that differ from usher's own only in case or
// in "_" for "-" (which CGI-style origins read as the same name) are
// removed with them, so that no client-made copy of the admission token,
// an X-Usher-* header or a forwarding header reaches the origin.

// hopHeaders are the hop-by-hop headers removed both ways whatever the
// Connection header says (ReverseProxy's list).
var hopHeaders = [...]string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// isHop reports whether the canonical header name k is one of hopHeaders.
func isHop(k string) bool {
	for _, h := range hopHeaders {
		if k == h {
			return true
		}
	}
	return false
}

// sameName reports whether the header name k is want (lower case, "-"
// between words) when case and "_" for "-" are ignored.
func sameName(k, want string) bool {
	return len(k) == len(want) && hasNamePrefix(k, want)
}

// hasNamePrefix is sameName for a prefix of k.
func hasNamePrefix(k, prefix string) bool {
	if len(k) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := k[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		} else if c == '_' {
			c = '-'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// isForwarding reports whether k names a forwarding header usher sets
// itself (or removes): Forwarded, X-Forwarded-For, -Host, -Proto.
func isForwarding(k string) bool {
	switch len(k) {
	case len("forwarded"):
		return sameName(k, "forwarded")
	case len("x-forwarded-for"):
		return sameName(k, "x-forwarded-for")
	case len("x-forwarded-host"):
		return sameName(k, "x-forwarded-host")
	case len("x-forwarded-proto"):
		return sameName(k, "x-forwarded-proto")
	}
	return false
}

// connectionListed reports whether the Connection header values conn name
// k (RFC 9110, 7.6.1: those headers are hop-by-hop too).
func connectionListed(conn []string, k string) bool { return hasToken(conn, k) }

// upgrading reports whether h asks to switch protocols (Connection:
// Upgrade): such requests go through ReverseProxy, which tunnels them.
func upgrading(h http.Header) bool {
	return hasToken(h["Connection"], "Upgrade")
}

// hasToken reports whether the comma-separated lists of values hold
// token, in any case.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for f := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(f), token) {
				return true
			}
		}
	}
	return false
}

// outHeader returns the header of the request to the origin: in's headers
// without the hop-by-hop ones, the forwarding headers, usher's own
// (X-Usher-*, the admission token's header, with their "_" and case
// variants) and, for an admitted visitor, usher's cookies; then usher's
// own forwarding headers and admission token. The values are in's (never
// changed in place), the header map is new.
func (g *Gate) outHeader(in http.Header, info *proxyInfo) http.Header {
	h := make(http.Header, len(in)+4)
	conn := in["Connection"]
	var folded string // the admission token's header, folded
	if info.tokenHeader != "" {
		folded = g.tokens.folded
	}
	for k, v := range in {
		switch {
		case isHop(k), isForwarding(k), hasNamePrefix(k, "x-usher-"):
			continue
		case folded != "" && sameName(k, folded):
			continue
		case len(conn) > 0 && k != server.RequestIDHeader && connectionListed(conn, k):
			// (The request id is usher's, set on the request by
			// server.RequestID.)
			continue
		}
		h[k] = v
	}
	if info.cookie != "" {
		stripCookie(h, info.cookie)
		stripCookie(h, info.powCookie)
	}
	// The headers set here share one backing array (one allocation, not
	// one per header); their keys are canonical already, as Set would make
	// them (tokenHeader is canonicalized by Tokens.init).
	vals := make([]string, 0, 6)
	set := func(k, v string) {
		vals = append(vals, v)
		h[k] = vals[len(vals)-1 : len(vals) : len(vals)]
	}
	if info.token != "" {
		set(info.tokenHeader, info.token)
	}
	g.setForwarded(set, in, info)
	if hasToken(in["Te"], "trailers") {
		// The client takes trailers: the origin may send them.
		set("Te", "trailers")
	}
	if _, ok := h["User-Agent"]; !ok {
		// Not Go's default User-Agent: none, as the client sent.
		set("User-Agent", "")
	}
	return h
}

// foldName returns the header name k in lower case with "-" for "_", as
// sameName compares.
func foldName(k string) string {
	return strings.ReplaceAll(strings.ToLower(k), "_", "-")
}

// setForwarded sets X-Forwarded-For, -Proto and -Host from info.
func (g *Gate) setForwarded(set func(k, v string), in http.Header, info *proxyInfo) {
	if info.peer.IsValid() {
		xff := info.peer.String()
		if prior := in["X-Forwarded-For"]; info.peerTrusted && len(prior) > 0 {
			xff = strings.Join(prior, ", ") + ", " + xff
		}
		set("X-Forwarded-For", xff)
	}
	set("X-Forwarded-Proto", info.scheme)
	if info.host != "" {
		set("X-Forwarded-Host", info.host)
	}
}

// pass sends r to the origin info.target and streams the answer to w
// (usher's proxy core; see the top of this file). pc is r's context with
// the request's proxyInfo.
func (g *Gate) pass(w http.ResponseWriter, r *http.Request, pc *proxyContext) {
	info := &pc.info
	pc.w = w
	pc.url = *r.URL
	pc.url.RawQuery = cleanQuery(pc.url.RawQuery)
	// The lean client passes 1xx answers to pc itself; http.Transport
	// through the request's trace.
	var ctx context.Context = pc
	lean := g.lean != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead) && r.ContentLength == 0 &&
		info.target.Scheme == "http"
	if !lean {
		pc.trace.Got1xxResponse = pc.got1xx
		ctx = httptrace.WithClientTrace(pc, &pc.trace)
	}
	out := r.WithContext(ctx)
	out.URL = &pc.url
	(&httputil.ProxyRequest{In: r, Out: out}).SetURL(info.target)
	out.Header = g.outHeader(r.Header, info)
	out.Close = false
	out.RequestURI = ""
	if r.ContentLength == 0 {
		out.Body = nil // the transport may then retry the request on another connection
	} else if r.Body != nil {
		// The transport closes the body it was given, on errors too;
		// the client's must stay open until this handler returns (a
		// 100-continue body not yet asked for would hang on Close).
		pc.body.rc = r.Body
		out.Body = &pc.body
		defer pc.body.Close()
	}

	var res *http.Response
	var err error
	if lean && leanRequest(out) {
		res, err = g.lean.roundTrip(out, pc)
	} else {
		res, err = g.transport.RoundTrip(out)
	}
	pc.mu.Lock()
	pc.done = true
	pc.mu.Unlock()
	if err != nil {
		g.proxyError(w, out, err)
		return
	}
	if res.StatusCode == http.StatusSwitchingProtocols {
		// Upgrade requests go through ReverseProxy: this one asked for none.
		res.Body.Close()
		g.proxyError(w, out, fmt.Errorf("the origin switched protocols (%q) unasked", res.Header.Get("Upgrade")))
		return
	}
	removeHop(res.Header)
	if err := g.modifyResponse(res); err != nil {
		res.Body.Close()
		g.proxyError(w, out, err)
		return
	}
	dst := w.Header()
	for k, v := range res.Header {
		if prior, ok := dst[k]; ok {
			dst[k] = append(prior[:len(prior):len(prior)], v...)
		} else {
			dst[k] = v
		}
	}
	announced := len(res.Trailer)
	if announced > 0 {
		keys := make([]string, 0, announced)
		for k := range res.Trailer {
			keys = append(keys, k)
		}
		dst["Trailer"] = []string{strings.Join(keys, ", ")}
	}
	w.WriteHeader(res.StatusCode)
	flush := streamed(res)
	if flush {
		// The headers now, whenever the body comes.
		_ = http.NewResponseController(w).Flush()
	}
	if err := g.copyBody(w, res.Body, flush); err != nil {
		res.Body.Close()
		if r.Context().Value(http.ServerContextKey) != nil {
			// The answer is cut short: abort the connection, so that
			// the client does not take it for a whole one.
			panic(http.ErrAbortHandler)
		}
		return
	}
	res.Body.Close() // fills res.Trailer
	if len(res.Trailer) > 0 {
		// Chunked, so that the trailers can follow.
		_ = http.NewResponseController(w).Flush()
	}
	if len(res.Trailer) == announced {
		for k, v := range res.Trailer {
			dst[k] = append(dst[k], v...)
		}
		return
	}
	for k, v := range res.Trailer {
		k = http.TrailerPrefix + k
		dst[k] = append(dst[k], v...)
	}
}

// streamed reports whether res's body is passed on as it comes (flushed
// after every read): event streams and bodies of unknown length.
func streamed(res *http.Response) bool {
	if res.ContentLength == -1 {
		return true
	}
	ct := res.Header["Content-Type"]
	if len(ct) == 0 || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(ct[0])), "text/event-stream") {
		return false
	}
	base, _, _ := mime.ParseMediaType(ct[0])
	return base == "text/event-stream"
}

// copyBody copies the origin's body to w through a pooled buffer, flushing
// after each write when flush is set. The error is the first read error
// but EOF, or write error.
func (g *Gate) copyBody(w http.ResponseWriter, body io.Reader, flush bool) error {
	buf := g.buffers.Get()
	defer g.buffers.Put(buf)
	var rc *http.ResponseController
	if flush {
		rc = http.NewResponseController(w)
	}
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			if werr != nil {
				return werr
			}
			if m != n {
				return io.ErrShortWrite
			}
			if rc != nil {
				_ = rc.Flush()
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// removeHop removes the hop-by-hop headers of an origin's response.
func removeHop(h http.Header) {
	if conn := h["Connection"]; len(conn) > 0 {
		for _, v := range conn {
			for f := range strings.SplitSeq(v, ",") {
				if f = textproto.TrimString(f); f != "" {
					h.Del(f)
				}
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
}

// got1xx passes an informational answer (103 Early Hints) on to the
// client while the origin's final answer has not come.
func (c *proxyContext) got1xx(code int, header textproto.MIMEHeader) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return nil
	}
	h := c.w.Header()
	// Only the 1xx's own headers go with it (the ticket cookie waits for
	// the final answer).
	saved := h.Clone()
	clear(h)
	for k, v := range header {
		h[k] = v
	}
	c.w.WriteHeader(code)
	clear(h)
	for k, v := range saved {
		h[k] = v
	}
	return nil
}

// bodyReader is a request body whose Close does not close the client's
// body, and after which reads (by a transport still writing it) return
// EOF.
type bodyReader struct {
	rc     io.ReadCloser
	closed atomic.Bool
}

func (b *bodyReader) Read(p []byte) (int, error) {
	if b.closed.Load() {
		return 0, io.EOF
	}
	return b.rc.Read(p)
}

func (b *bodyReader) Close() error {
	b.closed.Store(true)
	return nil
}

// maxQueryParams is the number of query parameters past which a query is
// re-encoded (net/url's default limit, as ReverseProxy).
const maxQueryParams = 10000

// cleanQuery returns the query string s as the origin should get it: s
// itself when every parser reads it the same, else re-encoded from what
// url.ParseQuery reads (";" separators, bad escapes, too many parameters
// are dropped), as ReverseProxy does.
func cleanQuery(s string) string {
	if s == "" {
		return s
	}
	reencode := func(s string) string {
		v, _ := url.ParseQuery(s)
		return v.Encode()
	}
	if strings.Count(s, "&")+1 > maxQueryParams {
		return reencode(s)
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case ';':
			return reencode(s)
		case '%':
			if i+2 >= len(s) || !ishex(s[i+1]) || !ishex(s[i+2]) {
				return reencode(s)
			}
			i += 3
		default:
			i++
		}
	}
	return s
}

func ishex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
