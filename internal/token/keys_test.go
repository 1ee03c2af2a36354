package token_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

// TestDeriveKeyVector pins the derivation with a vector computed outside
// Go (Python: HMAC-SHA256 HKDF by hand, then the cryptography package's
// Ed25519): changing it would change every node's token keys at once.
func TestDeriveKeyVector(t *testing.T) {
	k, err := token.DeriveKey(usher.Key{ID: "k1", Secret: make([]byte, 32)})
	if err != nil {
		t.Fatal(err)
	}
	if k.ID != "k1" {
		t.Errorf("ID = %q", k.ID)
	}
	if got, want := hex.EncodeToString(k.PrivateKey.Seed()), "3f2d265f99478e97649e9abde564760f6bce7801ca2ec3001e702dd04661c34f"; got != want {
		t.Errorf("seed = %s, want %s", got, want)
	}
	if got, want := hex.EncodeToString(k.PrivateKey.Public().(ed25519.PublicKey)), "f5deba65da2f6cc9a28aef1b822063be2b981ceac3f1e1dbdcae3f780b9e6c8b"; got != want {
		t.Errorf("public key = %s, want %s", got, want)
	}
}

func TestDeriveKeysDiffer(t *testing.T) {
	keys, err := token.DeriveKeys([]usher.Key{tokentest.MustKey("a", 1), tokentest.MustKey("b", 2)})
	if err != nil {
		t.Fatal(err)
	}
	if keys[0].ID != "a" || keys[1].ID != "b" || keys[0].PrivateKey.Equal(keys[1].PrivateKey) {
		t.Errorf("keys = %v, %v", keys[0].ID, keys[1].ID)
	}
	// The token key is not the ticket secret.
	if string(keys[0].PrivateKey.Seed()) == string(tokentest.MustKey("a", 1).Secret) {
		t.Error("the seed is the ticket secret")
	}
}

func TestDeriveKeysErrors(t *testing.T) {
	_, err := token.DeriveKeys([]usher.Key{{ID: "", Secret: make([]byte, 32)}, {ID: "short", Secret: make([]byte, 16)}, {ID: "bad id!", Secret: make([]byte, 32)}})
	if err == nil {
		t.Fatal("DeriveKeys accepted bad keys")
	}
	for _, w := range []string{"id is empty", `key "short": secret must be 32 bytes, got 16`, `key "bad id!": id may hold only`} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
	if _, err := token.New(nil, token.Options{}); err == nil || !strings.Contains(err.Error(), "key ring is empty") {
		t.Errorf("New(nil) = %v", err)
	}
}

func TestParsePrivateKey(t *testing.T) {
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	want := ed25519.NewKeyFromSeed(seed)
	der, err := x509.MarshalPKCS8PrivateKey(want)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	for _, tc := range []struct{ name, in string }{
		{"pem", pemKey},
		{"pem with spaces", "\n  " + pemKey + "\n"},
		{"base64", base64.StdEncoding.EncodeToString(seed)},
		{"base64 unpadded", base64.RawStdEncoding.EncodeToString(seed)},
		{"base64url", base64.URLEncoding.EncodeToString(seed)},
		{"base64url unpadded", base64.RawURLEncoding.EncodeToString(seed)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := token.ParsePrivateKey(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(want) {
				t.Error("a different key")
			}
		})
	}
	rsaPEM := "-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", " \n", "private key: empty"},
		{"short seed", base64.StdEncoding.EncodeToString(seed[:31]), "seed must be 32 bytes, got 31"},
		{"long seed", base64.StdEncoding.EncodeToString(append(seed, seed...)), "seed must be 32 bytes, got 64"},
		{"not base64", "not a key at all", "neither"},
		{"pem of another type", rsaPEM, `PEM block is "RSA PRIVATE KEY"`},
		{"broken pem", "-----BEGIN PRIVATE KEY-----\n", "does not parse"},
		{"two pem blocks", pemKey + pemKey, "more than one PEM block"},
		{"pem garbage", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", "private key:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := token.ParsePrivateKey(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParsePrivateKey = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestNewFromKeysErrors(t *testing.T) {
	a := ed25519.NewKeyFromSeed(make([]byte, 32))
	b := ed25519.NewKeyFromSeed(append(make([]byte, 31), 1))
	mismatched := append(ed25519.PrivateKey(nil), a...)
	copy(mismatched[32:], b[32:])
	for _, tc := range []struct {
		name string
		keys []token.SigningKey
		opts token.Options
		want []string
	}{
		{"none", nil, token.Options{}, []string{"no signing keys"}},
		{"bad id", []token.SigningKey{{ID: "a b", PrivateKey: a}}, token.Options{}, []string{`"a b"`, "may hold only"}},
		{"long id", []token.SigningKey{{ID: strings.Repeat("x", 65), PrivateKey: a}}, token.Options{}, []string{"at most 64"}},
		{"short key", []token.SigningKey{{ID: "a", PrivateKey: a[:32]}}, token.Options{}, []string{"64 bytes, got 32"}},
		{"mismatched halves", []token.SigningKey{{ID: "a", PrivateKey: mismatched}}, token.Options{}, []string{"does not match its seed"}},
		{"repeated id", []token.SigningKey{{ID: "a", PrivateKey: a}, {ID: "a", PrivateKey: b}}, token.Options{}, []string{"used by more than one key"}},
		{"repeated key", []token.SigningKey{{ID: "a", PrivateKey: a}, {ID: "b", PrivateKey: a}}, token.Options{}, []string{`"b": same key as "a"`}},
		{"negative ttl and a bad key", []token.SigningKey{{ID: "", PrivateKey: a}}, token.Options{TTL: -1}, []string{"ttl must not be negative", "id is empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := token.NewFromKeys(tc.keys, tc.opts)
			if err == nil {
				t.Fatal("NewFromKeys accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestExplicitKeys: a signer with keys of its own (not derived) signs and
// verifies, and publishes them under their ids.
func TestExplicitKeys(t *testing.T) {
	k, err := token.ParsePrivateKey(base64.StdEncoding.EncodeToString(make([]byte, 32)))
	if err != nil {
		t.Fatal(err)
	}
	s, err := token.NewFromKeys([]token.SigningKey{{ID: "2026-03.token", PrivateKey: k}}, token.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := s.Verifier().Verify(tokentest.MustSign(t, s, tokentest.Claims()), tokentest.Room, tokentest.Now)
	if err != nil || c.KeyID != "2026-03.token" {
		t.Fatalf("Verify = %+v, %v", c, err)
	}
	if !strings.Contains(string(s.JWKS()), `"kid":"2026-03.token"`) {
		t.Errorf("JWKS = %s", s.JWKS())
	}
}
