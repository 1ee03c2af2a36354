package server

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/netip"
)

// RequestIDHeader is the header that carries the request id, in requests
// (from a trusted proxy, and on to the origin) and in responses.
const RequestIDHeader = "X-Request-Id"

type requestIDKey struct{}

// RequestID returns middleware that gives every request an id: the
// X-Request-Id sent by a trusted proxy when it is well-formed (1 to 128
// letters, digits and "-_.:+=/"), else a new random one. The id is stored
// in the request's context (RequestIDFrom), set on the request header so
// that the origin sees it, and echoed in the response header.
func RequestID(trusted []netip.Prefix, next http.Handler) http.Handler {
	return RequestIDFunc(func() []netip.Prefix { return trusted }, next)
}

// RequestIDFunc is RequestID with the trusted proxies read from trusted at
// each request, so that a config reload changes them.
func RequestIDFunc(trusted func() []netip.Prefix, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !validRequestID(id) || !IsTrusted(PeerAddr(r), trusted()) {
			id = NewRequestID()
			// One value for the request and the response (RequestIDHeader
			// is canonical): one allocation, not two. Its capacity is 1, so
			// an Add to either header copies it.
			v := []string{id}
			r.Header[RequestIDHeader] = v
			w.Header()[RequestIDHeader] = v
		} else {
			w.Header().Set(RequestIDHeader, id)
		}
		next.ServeHTTP(w, r.WithContext(&requestIDContext{Context: r.Context(), id: id}))
	})
}

// requestIDContext is a request's context with its id under requestIDKey:
// one allocation where context.WithValue would make two (the context and
// the id boxed in an interface).
type requestIDContext struct {
	context.Context
	id string
}

func (c *requestIDContext) Value(key any) any {
	if _, ok := key.(requestIDKey); ok {
		return c.id
	}
	return c.Context.Value(key)
}

// RequestIDFrom returns the request id stored in ctx by RequestID, or ""
// when there is none.
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewRequestID returns a new random request id (26 base32 characters, 130
// bits).
func NewRequestID() string { return rand.Text() }

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':' || c == '+' || c == '=' || c == '/':
		default:
			return false
		}
	}
	return true
}
