package verify_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

func TestKeysFetchedOnce(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	v := mustVerifier(t, js, newClock(), verify.Options{})
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	for range 50 {
		if _, err := v.Verify(tok); err != nil {
			t.Fatal(err)
		}
	}
	if n := js.hits.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

// TestKeysRefreshInBackground: after RefreshInterval the set is fetched
// again while the old one keeps serving; a failed refresh keeps the old
// keys.
func TestKeysRefreshInBackground(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	c := newClock()
	v := mustVerifier(t, js, c, verify.Options{RefreshInterval: time.Minute, Leeway: time.Hour})
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	c.Add(59 * time.Second)
	if _, err := v.Verify(tok); err != nil || js.hits.Load() != 1 {
		t.Fatalf("before the interval: %v, %d fetches", err, js.hits.Load())
	}
	c.Add(time.Second)
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the refresh", func() bool { return js.hits.Load() == 2 })

	js.fail(http.StatusInternalServerError)
	c.Add(time.Minute)
	// The server counts the second fetch before the verifier has stored
	// its answer; a Verify in between finds that fetch still under way
	// and starts none. So each poll verifies again (a refresh under way
	// serves everyone; the next one starts once it has ended).
	waitFor(t, "the failed refresh", func() bool {
		if _, err := v.Verify(tok); err != nil {
			t.Fatalf("with usher failing: %v", err)
		}
		return js.hits.Load() == 3
	})
	if err := v.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("Refresh = %v, want the 500", err)
	}
	for range 10 {
		if _, err := v.Verify(tok); err != nil {
			t.Fatalf("stale keys: %v", err)
		}
	}
}

// TestUnknownKidRefetch: a token with a kid the cache lacks makes one
// fetch at once (how rotation reaches the origin), and forged kids make
// at most one fetch per MinRefetchInterval.
func TestUnknownKidRefetch(t *testing.T) {
	old := tokentest.MustKey("old", 1)
	next := tokentest.MustKey("new", 2)
	before := tokentest.MustSigner(t, []usher.Key{old}, token.Options{})
	js := newJWKSServer(t, before)
	c := newClock()
	v := mustVerifier(t, js, c, verify.Options{Leeway: time.Hour})
	if _, err := v.Verify(tokentest.MustSign(t, before, tokentest.Claims())); err != nil {
		t.Fatal(err)
	}

	// usher rotates: the new key signs.
	after := tokentest.MustSigner(t, []usher.Key{next, old}, token.Options{})
	js.set(after)
	c.Add(time.Minute)
	claims, err := v.Verify(tokentest.MustSign(t, after, tokentest.Claims()))
	if err != nil || claims.KeyID != "new" {
		t.Fatalf("new key: %+v, %v", claims, err)
	}
	if n := js.hits.Load(); n != 2 {
		t.Fatalf("%d fetches, want 2", n)
	}

	// A flood of unknown kids.
	for i := range 200 {
		forged := tokentest.MustSign(t, tokentest.MustSigner(t, []usher.Key{tokentest.MustKey(fmt.Sprintf("f%d", i%5), byte(10+i%5))}, token.Options{}), tokentest.Claims())
		if _, err := v.Verify(forged); !errors.Is(err, verify.ErrUnknownKey) {
			t.Fatalf("forged kid: %v", err)
		}
	}
	if n := js.hits.Load(); n != 2 {
		t.Errorf("forged kids within 30 s of the last fetch made %d fetches, want none", n-2)
	}
	c.Add(verify.MinRefetchInterval)
	for range 50 {
		forged := tokentest.MustSign(t, tokentest.MustSigner(t, []usher.Key{tokentest.MustKey("zz", 9)}, token.Options{}), tokentest.Claims())
		_, _ = v.Verify(forged)
	}
	if n := js.hits.Load(); n != 3 {
		t.Errorf("%d fetches after the interval, want 3", n)
	}

	// The old key is dropped: its tokens fail once the set is refetched.
	js.set(tokentest.MustSigner(t, []usher.Key{next}, token.Options{}))
	c.Add(verify.DefaultRefreshInterval)
	oldTok := tokentest.MustSign(t, before, tokentest.Claims())
	_, _ = v.Verify(oldTok) // starts the refresh
	waitFor(t, "the refresh", func() bool { return js.hits.Load() == 4 })
	waitFor(t, "the old key to go", func() bool {
		_, err := v.Verify(oldTok)
		return errors.Is(err, verify.ErrUnknownKey)
	})
}

// TestNoKeys: with usher unreachable and no keys held, tokens are neither
// valid nor invalid but ErrKeysUnavailable; fetches are retried at most
// once a second; the first success ends it.
func TestNoKeys(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	js.fail(http.StatusBadGateway)
	c := newClock()
	v := mustVerifier(t, js, c, verify.Options{})
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	for range 20 {
		_, err := v.Verify(tok)
		if !errors.Is(err, verify.ErrKeysUnavailable) || !strings.Contains(err.Error(), "502") {
			t.Fatalf("Verify = %v", err)
		}
	}
	if n := js.hits.Load(); n != 1 {
		t.Errorf("%d fetches within a second, want 1", n)
	}
	// Malformed tokens never cause a fetch.
	if _, err := v.Verify("garbage"); !errors.Is(err, verify.ErrMalformed) {
		t.Errorf("garbage: %v", err)
	}
	js.fail(0)
	c.Add(time.Second)
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("after usher is back: %v", err)
	}
	if n := js.hits.Load(); n != 2 {
		t.Errorf("%d fetches, want 2", n)
	}
}

// TestFetchWaitEndsWithContext: a request waiting for the keys stops when
// its context ends; the fetch goes on for the others.
func TestFetchWaitEndsWithContext(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	release := make(chan struct{})
	js.mu.Lock()
	js.hold = release
	js.mu.Unlock()
	v := mustVerifier(t, js, newClock(), verify.Options{})
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := v.VerifyContext(ctx, tok); !errors.Is(err, verify.ErrKeysUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("VerifyContext = %v", err)
	}
	close(release)
	if _, err := v.Verify(tok); err != nil {
		t.Fatal(err)
	}
	if n := js.hits.Load(); n != 1 {
		t.Errorf("%d fetches, want 1", n)
	}
}

func TestRefresh(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	v := mustVerifier(t, js, newClock(), verify.Options{})
	if err := v.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	bad, err := verify.New(verify.Options{JWKSURL: js.Server.URL + "/nothing-here", Room: "r"})
	if err != nil {
		t.Fatal(err)
	}
	js.fail(http.StatusNotFound)
	if err := bad.Refresh(context.Background()); !errors.Is(err, verify.ErrKeysUnavailable) || !strings.Contains(err.Error(), "404") {
		t.Errorf("Refresh = %v", err)
	}
}

func TestParseJWKS(t *testing.T) {
	x := "9d66ZdovbMmiiu8bgiBjviuYHOrD8eHb3K4_eAuebIs"
	for _, tc := range []struct {
		name, jwks string
		kids       []string
		err        string
	}{
		{"usher's", `{"keys":[{"use":"sig","kty":"OKP","kid":"k1","crv":"Ed25519","alg":"EdDSA","x":"` + x + `"}]}`, []string{"k1"}, ""},
		{"minimal", `{"keys":[{"kty":"OKP","kid":"k1","crv":"Ed25519","x":"` + x + `"}]}`, []string{"k1"}, ""},
		{"others skipped", `{"keys":[{"kty":"RSA","kid":"r","n":"x","e":"AQAB"},{"kty":"OKP","crv":"X25519","kid":"x","x":"` + x + `"},` +
			`{"kty":"OKP","crv":"Ed25519","kid":"enc","use":"enc","x":"` + x + `"},{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"` + x + `"}]}`, []string{"k1"}, ""},
		{"empty", `{"keys":[]}`, nil, "no Ed25519 signing key"},
		{"not json", `<html>`, nil, "key set:"},
		{"no kid", `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}]}`, nil, "no kid"},
		{"short x", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"AAAA"}]}`, nil, `key "k": x is not`},
		{"padded x", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `="}]}`, nil, `key "k": x is not`},
		{"duplicate kid", `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `"},{"kty":"OKP","crv":"Ed25519","kid":"k","x":"` + x + `"}]}`, nil, "used by two keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := verify.ParseJWKS([]byte(tc.jwks))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("error = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) != len(tc.kids) {
				t.Errorf("keys = %v, want %v", keys, tc.kids)
			}
			for _, k := range tc.kids {
				if _, ok := keys[k]; !ok {
					t.Errorf("no key %q", k)
				}
			}
		})
	}
}
