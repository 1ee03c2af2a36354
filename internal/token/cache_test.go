package token_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

func TestCacheReuse(t *testing.T) {
	s := tokentest.New(t).Signer
	v := s.Verifier()
	cache := s.NewCache(0)
	at := func(d time.Duration, mod func(*token.Claims)) (string, token.Claims) {
		t.Helper()
		c := tokentest.Claims()
		c.IssuedAt = tokentest.Now.Add(d)
		c.Expiry = tokentest.Now.Add(time.Hour) // the session end
		if mod != nil {
			mod(&c)
		}
		tok, err := cache.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Verify(tok, c.Room, c.IssuedAt)
		if err != nil {
			t.Fatalf("a cached token at +%s: %v", d, err)
		}
		return tok, got
	}
	first, _ := at(0, nil)
	if again, _ := at(2*time.Minute+30*time.Second, nil); again != first {
		t.Error("not reused with half the TTL left")
	}
	if later, c := at(2*time.Minute+31*time.Second, nil); later == first || !c.IssuedAt.Equal(tokentest.Now.Add(2*time.Minute+31*time.Second)) {
		t.Errorf("reused with less than half the TTL left (iat %s)", c.IssuedAt)
	}
	fresh, _ := at(3*time.Minute, nil)
	if other, _ := at(3*time.Minute, func(c *token.Claims) { c.VisitorID[0]++ }); other == fresh {
		t.Error("another visitor got the same token")
	}
	if other, _ := at(3*time.Minute, func(c *token.Claims) { c.AdmittedAt = c.AdmittedAt.Add(time.Second) }); other == fresh {
		t.Error("another admission got the same token")
	}
	if other, _ := at(3*time.Minute, func(c *token.Claims) { c.Room = "other" }); other == fresh {
		t.Error("another room got the same token")
	}
	// The session now ends before the cached token: a new one, not past it.
	end := tokentest.Now.Add(4 * time.Minute)
	short, c := at(3*time.Minute, func(c *token.Claims) { c.Expiry = end })
	if short == fresh || c.Expiry.After(end) {
		t.Errorf("a shorter session got exp %s (end %s)", c.Expiry, end)
	}
	// The clock goes back before the cached token's nbf: a new one.
	if back, _ := at(time.Minute, func(c *token.Claims) { c.Expiry = end }); back == short {
		t.Error("a token not yet valid was reused")
	}
	if cache.Len() != 4 { // one per visitor, admission and room
		t.Errorf("Len = %d, want 4", cache.Len())
	}
}

// TestCacheShortSession: in a session shorter than twice the TTL, a token
// is reused while it has half the life left a new one would get (to the
// session's end), not signed anew on every request; never past the end.
func TestCacheShortSession(t *testing.T) {
	s := tokentest.New(t).Signer // TTL 5 minutes
	v := s.Verifier()
	cache := s.NewCache(0)
	at := func(d, end time.Duration) (string, token.Claims) {
		t.Helper()
		c := tokentest.Claims()
		c.IssuedAt = tokentest.Now.Add(d)
		c.Expiry = tokentest.Now.Add(end)
		tok, err := cache.Sign(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := v.Verify(tok, c.Room, c.IssuedAt)
		if err != nil {
			t.Fatalf("token at +%s: %v", d, err)
		}
		if got.Expiry.After(c.Expiry) {
			t.Errorf("token at +%s expires %s, after the session's end %s", d, got.Expiry, c.Expiry)
		}
		return tok, got
	}
	// A one-minute session renewed on every request (the end slides).
	first, c := at(0, time.Minute)
	if !c.Expiry.Equal(tokentest.Now.Add(time.Minute)) {
		t.Fatalf("first token expires %s", c.Expiry)
	}
	for _, d := range []time.Duration{time.Second, 10 * time.Second, 30 * time.Second} {
		if tok, _ := at(d, d+time.Minute); tok != first {
			t.Errorf("at +%s (30 s of 60 left at most): signed anew, want the cached token", d)
		}
	}
	second, _ := at(31*time.Second, 91*time.Second)
	if second == first {
		t.Error("at +31s, 29 s left of a possible 60: reused")
	}
	// A session that is not renewed: its end stays, and the token capped
	// at it is reused to the end.
	cache = s.NewCache(0)
	end := 2 * time.Minute
	first, _ = at(0, end)
	for _, d := range []time.Duration{time.Minute, 110 * time.Second, 119 * time.Second} {
		if tok, _ := at(d, end); tok != first {
			t.Errorf("at +%s of a session ending at +%s: signed anew", d, end)
		}
	}
}

func TestCacheBounded(t *testing.T) {
	s := tokentest.New(t).Signer
	cache := s.NewCache(16)
	for i := range 1000 {
		c := tokentest.Claims()
		c.VisitorID[7] = byte(i)
		c.VisitorID[6] = byte(i >> 8)
		c.IssuedAt = tokentest.Now.Add(time.Duration(i) * time.Second)
		if _, err := cache.Sign(c); err != nil {
			t.Fatal(err)
		}
		if n := cache.Len(); n > 16 {
			t.Fatalf("Len = %d after %d visitors, want at most 16", n, i+1)
		}
	}
}

func TestCacheErrors(t *testing.T) {
	cache := tokentest.New(t).Signer.NewCache(4)
	c := tokentest.Claims()
	c.Room = ""
	if _, err := cache.Sign(c); err == nil || !strings.Contains(err.Error(), "room is empty") {
		t.Errorf("Sign = %v", err)
	}
	c = tokentest.Claims()
	c.Expiry = c.IssuedAt.Add(-time.Second)
	if _, err := cache.Sign(c); err == nil || !strings.Contains(err.Error(), "not after the issued-at time") {
		t.Errorf("Sign = %v", err)
	}
	if cache.Len() != 0 {
		t.Errorf("errors were cached")
	}
}

func TestCacheConcurrent(t *testing.T) {
	s := tokentest.New(t).Signer
	cache := s.NewCache(8)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				c := tokentest.Claims()
				c.VisitorID[7] = byte(i % 12)
				c.IssuedAt = tokentest.Now.Add(time.Duration(g) * time.Second)
				if _, err := cache.Sign(c); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}
