package verify_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

// TestCorpus runs the shared corpus through the package's own parser:
// it accepts exactly the valid tokens, and refuses the rest with a reason
// usher's verifier could give too.
func TestCorpus(t *testing.T) {
	s := tokentest.New(t)
	v := mustVerifier(t, newJWKSServer(t, s.Signer), newClock(), verify.Options{Issuer: tokentest.Issuer})
	for _, c := range s.Cases {
		t.Run(c.Name, func(t *testing.T) {
			claims, err := v.Verify(c.Token)
			if c.Valid {
				if err != nil {
					t.Fatalf("Verify: %v, want valid", err)
				}
				if claims.Room != tokentest.Room || claims.Subject != "deadbeef01234567" {
					t.Errorf("claims = %+v", claims)
				}
				return
			}
			if err == nil {
				t.Fatalf("Verify accepted %s: %+v", c.Name, claims)
			}
			if r := verify.Reason(err); !slices.Contains(c.Reasons, r) {
				t.Errorf("reason = %q (%v), want one of %q", r, err, c.Reasons)
			}
			if claims != (verify.Claims{}) {
				t.Errorf("a refusal returned claims %+v", claims)
			}
		})
	}
}

func TestClaims(t *testing.T) {
	s := tokentest.New(t)
	v := mustVerifier(t, newJWKSServer(t, s.Signer), newClock(), verify.Options{})
	in := tokentest.Claims()
	in.Expiry = tokentest.Now.Add(2 * time.Minute)
	got, err := v.Verify(tokentest.MustSign(t, s.Signer, in))
	if err != nil {
		t.Fatal(err)
	}
	want := verify.Claims{
		Room:          tokentest.Room,
		Subject:       "deadbeef01234567",
		Issuer:        "usher",
		IssuedAt:      tokentest.Now,
		NotBefore:     tokentest.Now,
		Expiry:        tokentest.Now.Add(2 * time.Minute),
		AdmittedAt:    tokentest.Now.Add(-time.Minute),
		QueuePosition: 42,
		Waited:        17 * time.Minute,
		KeyID:         "k1",
	}
	if got != want {
		t.Errorf("claims\n got %+v\nwant %+v", got, want)
	}
}

// TestAgreesWithUsher: for every token of the corpus, the public package
// and usher's own verifier (go-jose) agree on valid or not, and on the
// claims of the valid ones.
func TestAgreesWithUsher(t *testing.T) {
	s := tokentest.New(t)
	v := mustVerifier(t, newJWKSServer(t, s.Signer), newClock(), verify.Options{Issuer: tokentest.Issuer})
	u := s.Signer.Verifier()
	for _, c := range s.Cases {
		got, err := v.Verify(c.Token)
		want, uerr := u.Verify(c.Token, tokentest.Room, tokentest.Now)
		if (err == nil) != (uerr == nil) {
			t.Errorf("%s: verify says %v, usher says %v", c.Name, err, uerr)
			continue
		}
		if err != nil {
			continue
		}
		if got.Subject != want.Subject() || !got.Expiry.Equal(want.Expiry) || !got.AdmittedAt.Equal(want.AdmittedAt) ||
			got.QueuePosition != want.QueuePosition || got.Waited != want.Waited || got.KeyID != want.KeyID {
			t.Errorf("%s: claims %+v, usher's %+v", c.Name, got, want)
		}
	}
}

func TestIssuer(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	for _, tc := range []struct {
		issuer string
		want   error
	}{
		{"", nil},
		{"usher", nil},
		{"https://shop.example", verify.ErrIssuer},
		{"Usher", verify.ErrIssuer},
	} {
		v := mustVerifier(t, js, newClock(), verify.Options{Issuer: tc.issuer})
		_, err := v.Verify(tok)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("Issuer %q: %v, want %v", tc.issuer, err, tc.want)
		}
	}
}

func TestLeeway(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims()) // exp Now+5m
	for _, tc := range []struct {
		leeway time.Duration
		after  time.Duration
		want   error
	}{
		{0, 5*time.Minute + 4*time.Second, nil},
		{0, 5*time.Minute + 5*time.Second, verify.ErrExpired},
		{-1, 5 * time.Minute, verify.ErrExpired},
		{-1, 5*time.Minute - time.Nanosecond, nil},
		{time.Minute, 5*time.Minute + 59*time.Second, nil},
		{0, -5 * time.Second, nil},
		{0, -6 * time.Second, verify.ErrNotYetValid},
	} {
		c := newClock()
		c.Add(tc.after)
		v := mustVerifier(t, js, c, verify.Options{Leeway: tc.leeway})
		_, err := v.Verify(tok)
		if !errors.Is(err, tc.want) || (err == nil) != (tc.want == nil) {
			t.Errorf("leeway %s, %s after issue: %v, want %v", tc.leeway, tc.after, err, tc.want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts verify.Options
		want []string
	}{
		{"empty", verify.Options{}, []string{"JWKSURL is required", "room is required"}},
		{"relative jwks", verify.Options{JWKSURL: "/__usher/jwks.json", Room: "r"}, []string{"absolute http or https"}},
		{"ftp jwks", verify.Options{JWKSURL: "ftp://x/jwks.json", Room: "r"}, []string{"absolute http or https"}},
		{"bad room url", verify.Options{JWKSURL: "http://x/j", Room: "r", RoomURL: "javascript:alert(1)"}, []string{"RoomURL"}},
		{"protocol-relative room url", verify.Options{JWKSURL: "http://x/j", Room: "r", RoomURL: "//evil.example/"}, []string{"RoomURL"}},
		{"bad header", verify.Options{JWKSURL: "http://x/j", Room: "r", Header: "X Token"}, []string{`header "X Token"`}},
		{"negative refresh", verify.Options{JWKSURL: "http://x/j", Room: "r", RefreshInterval: -time.Second}, []string{"RefreshInterval"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify.New(tc.opts)
			if err == nil {
				t.Fatal("New accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	for _, u := range []string{"/", "/room?x=1", "https://shop.example/"} {
		if _, err := verify.New(verify.Options{JWKSURL: "http://x/j", Room: "r", RoomURL: u}); err != nil {
			t.Errorf("RoomURL %q: %v", u, err)
		}
	}
}

// TestReasonNames: the package names refusals as usher's verify endpoint
// does.
func TestReasonNames(t *testing.T) {
	for _, tc := range []struct {
		ours, usher error
	}{
		{verify.ErrMalformed, token.ErrMalformed},
		{verify.ErrAlgorithm, token.ErrAlgorithm},
		{verify.ErrUnknownKey, token.ErrUnknownKey},
		{verify.ErrSignature, token.ErrSignature},
		{verify.ErrIssuer, token.ErrIssuer},
		{verify.ErrAudience, token.ErrAudience},
		{verify.ErrExpired, token.ErrExpired},
		{verify.ErrNotYetValid, token.ErrNotYetValid},
	} {
		if a, b := verify.Reason(tc.ours), token.Reason(tc.usher); a != b {
			t.Errorf("%v is %q here, %q in usher", tc.ours, a, b)
		}
	}
}
