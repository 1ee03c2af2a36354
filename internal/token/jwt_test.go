package token_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

// jwksKeys reads a JWKS the way an origin in another language would:
// plain JSON, only OKP/Ed25519 keys, each by kid.
func jwksKeys(tb testing.TB, jwks []byte) map[string]ed25519.PublicKey {
	tb.Helper()
	var set struct {
		Keys []struct {
			Kty, Crv, Use, Alg, Kid, X string
		} `json:"keys"`
	}
	if err := json.Unmarshal(jwks, &set); err != nil {
		tb.Fatal(err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Use != "sig" || k.Alg != "EdDSA" {
			tb.Fatalf("key %+v is not an Ed25519 signing key", k)
		}
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			tb.Fatalf("key %q: x = %q (%v)", k.Kid, k.X, err)
		}
		keys[k.Kid] = x
	}
	return keys
}

// independentVerify checks a token with golang-jwt, configured as the
// docs tell origins to: EdDSA only, keys from the JWKS by kid, issuer,
// audience, a required exp, 5 s leeway.
func independentVerify(tok string, keys map[string]ed25519.PublicKey, room string, now time.Time) (jwt.MapClaims, error) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		k, ok := keys[kid]
		if !ok {
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return k, nil
	},
		jwt.WithValidMethods([]string{"EdDSA"}),
		jwt.WithIssuer(tokentest.Issuer),
		jwt.WithAudience(room),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(token.DefaultLeeway),
		jwt.WithTimeFunc(func() time.Time { return now }),
	)
	return claims, err
}

// TestIndependentLibrary verifies usher's tokens with golang-jwt (not the
// library that signs them) and the public keys from the JWKS: valid
// tokens pass with the claims usher wrote; expired, not yet valid, wrong
// audience, wrong issuer, wrong key, alg none, HS256 with the public key
// and tampered tokens fail.
func TestIndependentLibrary(t *testing.T) {
	s := tokentest.New(t)
	keys := jwksKeys(t, s.Signer.JWKS())
	if len(keys) != 2 {
		t.Fatalf("JWKS has %d keys, want 2", len(keys))
	}
	for _, c := range s.Cases {
		if c.UsherOnly {
			continue // a general library may accept what the real key signed
		}
		t.Run(c.Name, func(t *testing.T) {
			claims, err := independentVerify(c.Token, keys, tokentest.Room, tokentest.Now)
			if !c.Valid {
				if err == nil {
					t.Fatalf("golang-jwt accepted %s: %v", c.Name, claims)
				}
				return
			}
			if err != nil {
				t.Fatalf("golang-jwt: %v", err)
			}
			if claims["sub"] != "deadbeef01234567" || claims["aud"] != tokentest.Room || claims["iss"] != tokentest.Issuer {
				t.Errorf("claims = %v", claims)
			}
		})
	}
}

// TestIndependentClaims checks every claim's name and JSON type as another
// library sees them.
func TestIndependentClaims(t *testing.T) {
	s := tokentest.New(t)
	c := tokentest.Claims()
	c.Expiry = tokentest.Now.Add(90 * time.Second) // the session ends before the TTL
	tok := tokentest.MustSign(t, s.Signer, c)
	claims, err := independentVerify(tok, jwksKeys(t, s.Signer.JWKS()), tokentest.Room, tokentest.Now)
	if err != nil {
		t.Fatal(err)
	}
	now := float64(tokentest.Now.Unix())
	want := jwt.MapClaims{
		"iss":            "usher",
		"aud":            "sale",
		"sub":            "deadbeef01234567",
		"iat":            now,
		"nbf":            now,
		"exp":            now + 90,
		"admitted_at":    now - 60,
		"queue_position": float64(42),
		"waited_s":       float64(17 * 60),
	}
	if fmt.Sprint(claims) != fmt.Sprint(want) {
		t.Errorf("claims\n got %v\nwant %v", claims, want)
	}
	var header map[string]any
	parsed, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	header = parsed.Header
	if fmt.Sprint(header) != fmt.Sprint(map[string]any{"alg": "EdDSA", "kid": "k1", "typ": "JWT"}) {
		t.Errorf("header = %v", header)
	}
}

// TestIndependentHS256Confusion: even a verifier that forgets to list
// algorithms cannot be fooled with the public key as an HMAC secret when
// its key function hands out Ed25519 keys; listing EdDSA is still what
// the docs ask.
func TestIndependentHS256Confusion(t *testing.T) {
	s := tokentest.New(t)
	keys := jwksKeys(t, s.Signer.JWKS())
	for _, c := range s.Cases {
		if c.Valid || c.UsherOnly {
			continue
		}
		_, err := jwt.Parse(c.Token, func(t *jwt.Token) (any, error) {
			kid, _ := t.Header["kid"].(string)
			if k, ok := keys[kid]; ok {
				return k, nil
			}
			return nil, errors.New("unknown kid")
		}, jwt.WithAudience(tokentest.Room), jwt.WithTimeFunc(func() time.Time { return tokentest.Now }), jwt.WithIssuer(tokentest.Issuer))
		if err == nil {
			t.Errorf("%s: accepted without an algorithm list", c.Name)
		}
	}
}
