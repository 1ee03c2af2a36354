package token_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

// TestSignExpiry: a token expires after the TTL or at the session end,
// whichever comes first, never later; times are whole seconds rounded
// down, so never past the session end either.
func TestSignExpiry(t *testing.T) {
	now := tokentest.Now.Add(250 * time.Millisecond)
	for _, tc := range []struct {
		name       string
		ttl        time.Duration
		sessionEnd time.Time
		want       time.Time
	}{
		{"default ttl, no session end", 0, time.Time{}, tokentest.Now.Add(5 * time.Minute)},
		{"session ends later", 0, now.Add(time.Hour), tokentest.Now.Add(5 * time.Minute)},
		{"session ends sooner", 0, now.Add(time.Minute + 500*time.Millisecond), tokentest.Now.Add(time.Minute)},
		{"session end mid-second rounds down", 0, tokentest.Now.Add(90*time.Second + 999*time.Millisecond), tokentest.Now.Add(90 * time.Second)},
		{"ttl 30s", 30 * time.Second, now.Add(time.Hour), tokentest.Now.Add(30 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tokentest.MustSigner(t, tokentest.New(t).Ring, token.Options{TTL: tc.ttl})
			c := tokentest.Claims()
			c.IssuedAt, c.Expiry = now, tc.sessionEnd
			got, err := s.Verifier().Verify(tokentest.MustSign(t, s, c), tokentest.Room, now)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Expiry.Equal(tc.want) {
				t.Errorf("exp = %s, want %s", got.Expiry, tc.want)
			}
			if !tc.sessionEnd.IsZero() && got.Expiry.After(tc.sessionEnd) {
				t.Errorf("exp %s is after the session end %s", got.Expiry, tc.sessionEnd)
			}
		})
	}
}

func TestSignErrors(t *testing.T) {
	s := tokentest.New(t).Signer
	for _, tc := range []struct {
		name string
		mod  func(*token.Claims)
		want string
	}{
		{"no room", func(c *token.Claims) { c.Room = "" }, "room is empty"},
		{"no issued-at", func(c *token.Claims) { c.IssuedAt = time.Time{} }, "issued-at time is zero"},
		{"session ended", func(c *token.Claims) { c.Expiry = c.IssuedAt.Add(-time.Second) }, "session ends at 2026-03-14T15:09:25Z, not after"},
		{"session ends within the second", func(c *token.Claims) { c.Expiry = c.IssuedAt.Add(500 * time.Millisecond) }, "not after the issued-at time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tokentest.Claims()
			tc.mod(&c)
			tok, err := s.Sign(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) || tok != "" {
				t.Errorf("Sign = %q, %v; want an error saying %q", tok, err, tc.want)
			}
		})
	}
}

func TestSignOptionalClaims(t *testing.T) {
	s := tokentest.New(t).Signer
	c := tokentest.Claims()
	c.AdmittedAt, c.QueuePosition, c.Waited = time.Time{}, 0, 0
	c.NotBefore = tokentest.Now.Add(-time.Minute)
	got, err := s.Verifier().Verify(tokentest.MustSign(t, s, c), tokentest.Room, tokentest.Now)
	if err != nil {
		t.Fatal(err)
	}
	if !got.AdmittedAt.IsZero() || got.QueuePosition != 0 || got.Waited != 0 || !got.NotBefore.Equal(c.NotBefore) {
		t.Errorf("claims = %+v", got)
	}
}

func TestSignerAccessors(t *testing.T) {
	s := tokentest.New(t).Signer
	if s.Issuer() != "usher" || s.TTL() != token.DefaultTTL || s.KeyID() != "k1" {
		t.Errorf("Issuer %q, TTL %s, KeyID %q", s.Issuer(), s.TTL(), s.KeyID())
	}
	pub := s.PublicKeys()
	if len(pub) != 2 || pub[0].ID != "k1" || pub[1].ID != "k0" {
		t.Errorf("PublicKeys = %v", pub)
	}
	pub[0].ID = "changed"
	if s.PublicKeys()[0].ID != "k1" {
		t.Error("PublicKeys returned the Signer's own slice")
	}
}

// TestJWKS checks the key set's exact members.
func TestJWKS(t *testing.T) {
	s := tokentest.New(t).Signer
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(s.JWKS(), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("%d keys", len(set.Keys))
	}
	for i, k := range set.Keys {
		want := map[string]string{"kty": "OKP", "crv": "Ed25519", "use": "sig", "alg": "EdDSA", "kid": s.PublicKeys()[i].ID, "x": k["x"]}
		if len(k) != len(want) {
			t.Errorf("key %d has members %v, want exactly %v", i, k, want)
		}
		for name, v := range want {
			if k[name] != v {
				t.Errorf("key %d: %s = %q, want %q", i, name, k[name], v)
			}
		}
		if len(k["x"]) != 43 {
			t.Errorf("key %d: x = %q, want 32 bytes in unpadded base64url", i, k["x"])
		}
	}
	if strings.Contains(string(s.JWKS()), `"d"`) {
		t.Error("the JWKS holds a private member")
	}
}
