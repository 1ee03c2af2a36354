package token_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

// TestVerifyCorpus runs usher's own verifier over the shared corpus: it
// accepts exactly the valid tokens and names an expected reason for each
// refusal.
func TestVerifyCorpus(t *testing.T) {
	s := tokentest.New(t)
	v := s.Signer.Verifier()
	for _, c := range s.Cases {
		t.Run(c.Name, func(t *testing.T) {
			claims, err := v.Verify(c.Token, tokentest.Room, tokentest.Now)
			if c.Valid {
				if err != nil {
					t.Fatalf("Verify: %v, want valid", err)
				}
				if claims.Room != tokentest.Room || claims.VisitorID != tokentest.Visitor || claims.Issuer != tokentest.Issuer {
					t.Errorf("claims = %+v", claims)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify accepted %s: %+v", c.Name, claims)
			}
			if r := token.Reason(err); !slices.Contains(c.Reasons, r) {
				t.Errorf("Reason = %q (%v), want one of %q", r, err, c.Reasons)
			}
			if claims != (token.Claims{}) {
				t.Errorf("a refusal returned claims %+v", claims)
			}
		})
	}
}

func TestVerifyReturnsClaims(t *testing.T) {
	s := tokentest.New(t)
	in := tokentest.Claims()
	in.IssuedAt = tokentest.Now.Add(1500 * time.Millisecond) // truncated to the second
	in.Waited = 17*time.Minute + 900*time.Millisecond
	in.Expiry = tokentest.Now.Add(2*time.Minute + 700*time.Millisecond) // session end, before the TTL
	got, err := s.Signer.Verifier().Verify(tokentest.MustSign(t, s.Signer, in), tokentest.Room, tokentest.Now)
	if err != nil {
		t.Fatal(err)
	}
	want := token.Claims{
		Room:          tokentest.Room,
		VisitorID:     tokentest.Visitor,
		IssuedAt:      tokentest.Now.Add(time.Second),
		NotBefore:     tokentest.Now.Add(time.Second),
		Expiry:        tokentest.Now.Add(2 * time.Minute),
		AdmittedAt:    tokentest.Now.Add(-time.Minute),
		QueuePosition: 42,
		Waited:        17 * time.Minute,
		Issuer:        tokentest.Issuer,
		KeyID:         "k1",
	}
	if got != want {
		t.Errorf("claims\n got %+v\nwant %+v", got, want)
	}
	if got.Subject() != "deadbeef01234567" {
		t.Errorf("Subject = %q", got.Subject())
	}
}

// TestVerifyBoundaries pins exp and nbf at the leeway's edges.
func TestVerifyBoundaries(t *testing.T) {
	s := tokentest.New(t)
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims()) // nbf Now, exp Now+5m
	exp := tokentest.Now.Add(token.DefaultTTL)
	for _, tc := range []struct {
		name   string
		leeway time.Duration
		now    time.Time
		want   error
	}{
		{"before exp+leeway", 0, exp.Add(token.DefaultLeeway - time.Nanosecond), nil},
		{"at exp+leeway", 0, exp.Add(token.DefaultLeeway), token.ErrExpired},
		{"no leeway, at exp", -1, exp, token.ErrExpired},
		{"no leeway, just before exp", -1, exp.Add(-time.Nanosecond), nil},
		{"at nbf-leeway", 0, tokentest.Now.Add(-token.DefaultLeeway), nil},
		{"before nbf-leeway", 0, tokentest.Now.Add(-token.DefaultLeeway - time.Nanosecond), token.ErrNotYetValid},
		{"no leeway, before nbf", -1, tokentest.Now.Add(-time.Nanosecond), token.ErrNotYetValid},
		{"leeway 1m, 30s after exp", time.Minute, exp.Add(30 * time.Second), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := token.NewVerifier(s.Signer.PublicKeys(), token.VerifierOptions{Leeway: tc.leeway})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(tok, tokentest.Room, tc.now)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify at %s = %v, want %v", tc.now, err, tc.want)
			}
		})
	}
}

// TestVerifyErrorsSayWhatFailed checks that the messages name the claim,
// the values and the key.
func TestVerifyErrorsSayWhatFailed(t *testing.T) {
	s := tokentest.New(t)
	v := s.Signer.Verifier()
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	other := tokentest.MustSign(t, tokentest.MustSigner(t, []usher.Key{tokentest.MustKey("zz", 8)}, token.Options{}), tokentest.Claims())
	for _, tc := range []struct {
		tok, room string
		now       time.Time
		want      []string
	}{
		{tok, "other", tokentest.Now, []string{"wrong audience", `"sale"`, `"other"`}},
		{tok, tokentest.Room, tokentest.Now.Add(time.Hour), []string{"expired at 2026-03-14T15:14:26Z", "55m0s ago"}},
		{tok, tokentest.Room, tokentest.Now.Add(-time.Hour), []string{"not yet valid", "valid from 2026-03-14T15:09:26Z"}},
		{other, tokentest.Room, tokentest.Now, []string{"unknown key", `"zz"`}},
		{"x.y.z", tokentest.Room, tokentest.Now, []string{"malformed"}},
	} {
		_, err := v.Verify(tc.tok, tc.room, tc.now)
		if err == nil {
			t.Fatalf("Verify(%.20s..., %q) accepted", tc.tok, tc.room)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not say %q", err, w)
			}
		}
	}
}

// TestRotation: a token signed with the old first key verifies while the
// key is in the ring, and not once it is gone.
func TestRotation(t *testing.T) {
	old := tokentest.MustKey("old", 1)
	next := tokentest.MustKey("new", 2)
	before := tokentest.MustSigner(t, []usher.Key{old}, token.Options{})
	tok := tokentest.MustSign(t, before, tokentest.Claims())

	// Step 1: the new key is published second; the old one still signs.
	// Step 2: the new key signs; the old one is still published.
	// Step 3: the old key is dropped.
	for _, tc := range []struct {
		name string
		ring []usher.Key
		want error
	}{
		{"published", []usher.Key{old, next}, nil},
		{"signing", []usher.Key{next, old}, nil},
		{"dropped", []usher.Key{next}, token.ErrUnknownKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tokentest.MustSigner(t, tc.ring, token.Options{})
			c, err := s.Verifier().Verify(tok, tokentest.Room, tokentest.Now)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if err == nil && c.KeyID != "old" {
				t.Errorf("KeyID = %q, want old", c.KeyID)
			}
			fresh := tokentest.MustSign(t, s, tokentest.Claims())
			if c, err := s.Verifier().Verify(fresh, tokentest.Room, tokentest.Now); err != nil || c.KeyID != tc.ring[0].ID {
				t.Errorf("a fresh token: %v, kid %q, want %q", err, c.KeyID, tc.ring[0].ID)
			}
		})
	}
}

func TestNewVerifierErrors(t *testing.T) {
	s := tokentest.New(t)
	pub := s.Signer.PublicKeys()
	for _, tc := range []struct {
		name string
		keys []token.PublicKey
		want []string
	}{
		{"none", nil, []string{"no public keys"}},
		{"short key", []token.PublicKey{{ID: "a", Key: pub[0].Key[:31]}}, []string{`"a"`, "32 bytes, got 31"}},
		{"no id", []token.PublicKey{{Key: pub[0].Key}}, []string{"id is empty"}},
		{"duplicate", []token.PublicKey{{ID: "a", Key: pub[0].Key}, {ID: "a", Key: pub[1].Key}}, []string{"more than one key"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := token.NewVerifier(tc.keys, token.VerifierOptions{})
			if err == nil {
				t.Fatal("NewVerifier accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestReason(t *testing.T) {
	if r := token.Reason(nil); r != "" {
		t.Errorf("Reason(nil) = %q", r)
	}
	if r := token.Reason(errors.New("x")); r != "invalid" {
		t.Errorf("Reason(other) = %q", r)
	}
}
