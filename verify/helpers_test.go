package verify_test

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

// jwksServer is a fake usher that serves a key set it can change, fail
// or hold, and counts the fetches.
type jwksServer struct {
	*httptest.Server
	hits atomic.Int64

	mu     sync.Mutex
	jwks   []byte
	status int           // 0: 200
	hold   chan struct{} // when not nil, requests wait for it to close
}

func newJWKSServer(t testing.TB, s *token.Signer) *jwksServer {
	t.Helper()
	js := &jwksServer{jwks: s.JWKS()}
	js.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		js.hits.Add(1)
		js.mu.Lock()
		body, status, hold := js.jwks, js.status, js.hold
		js.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-r.Context().Done():
				return
			}
		}
		if status != 0 {
			http.Error(w, "down", status)
			return
		}
		w.Header().Set("Content-Type", "application/jwk-set+json")
		_, _ = w.Write(body)
	}))
	t.Cleanup(js.Close)
	return js
}

func (js *jwksServer) set(s *token.Signer) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.jwks = s.JWKS()
}

func (js *jwksServer) fail(status int) {
	js.mu.Lock()
	defer js.mu.Unlock()
	js.status = status
}

func (js *jwksServer) URL() string { return js.Server.URL + "/__usher/jwks.json" }

// clock is a settable time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: tokentest.Now} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustVerifier returns a Verifier for tokentest.Room against js at
// clock c, with the options given.
func mustVerifier(t *testing.T, js *jwksServer, c *clock, opts verify.Options) *verify.Verifier {
	t.Helper()
	opts.JWKSURL = js.URL()
	if opts.Room == "" {
		opts.Room = tokentest.Room
	}
	opts.Now = c.Now
	v, err := verify.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
