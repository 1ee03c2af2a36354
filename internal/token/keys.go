package token

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"strings"

	"github.com/usherhq/usher"
)

// deriveInfo is the HKDF info string that separates token keys from every
// other use of a ring key's secret. Changing it changes every token key.
const deriveInfo = "usher admission token v1"

// maxKeyIDLen is the longest key id. Ring key ids are at most 16
// characters; explicit keys may use longer ones.
const maxKeyIDLen = 64

// SigningKey is an Ed25519 private key and the id (the JWT "kid") under
// which its public key is published.
type SigningKey struct {
	// ID is 1-64 characters of A-Z, a-z, 0-9, '_', '-' and '.'.
	ID string
	// PrivateKey is an Ed25519 private key (ed25519.PrivateKeySize bytes).
	PrivateKey ed25519.PrivateKey
}

// PublicKey is an Ed25519 public key and its id.
type PublicKey struct {
	ID  string
	Key ed25519.PublicKey
}

// DeriveKey returns the signing key derived from a ticket ring key: the
// Ed25519 seed is HKDF-SHA256(secret, no salt, info "usher admission token
// v1"), the id is the ring key's id. Every node with the same ring key
// derives the same signing key; the token key reveals nothing about the
// ticket secret.
func DeriveKey(k usher.Key) (SigningKey, error) {
	if err := checkKeyID(k.ID); err != nil {
		return SigningKey{}, fmt.Errorf("key %q: %w", k.ID, err)
	}
	if len(k.Secret) != 32 {
		return SigningKey{}, fmt.Errorf("key %q: secret must be 32 bytes, got %d", k.ID, len(k.Secret))
	}
	seed, err := hkdf.Key(sha256.New, k.Secret, nil, deriveInfo, ed25519.SeedSize)
	if err != nil {
		return SigningKey{}, fmt.Errorf("key %q: derive: %w", k.ID, err)
	}
	return SigningKey{ID: k.ID, PrivateKey: ed25519.NewKeyFromSeed(seed)}, nil
}

// DeriveKeys derives the signing keys of a ticket key ring, in the ring's
// order (DeriveKey). It reports every key that cannot be derived.
func DeriveKeys(ring []usher.Key) ([]SigningKey, error) {
	keys := make([]SigningKey, 0, len(ring))
	var errs []error
	for _, k := range ring {
		sk, err := DeriveKey(k)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		keys = append(keys, sk)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return keys, nil
}

// ParsePrivateKey reads an Ed25519 private key written as a PKCS#8 PEM
// block ("-----BEGIN PRIVATE KEY-----", what "openssl genpkey -algorithm
// ed25519" writes) or as a 32-byte seed in base64 (standard or URL-safe,
// padded or not). Spaces and newlines around it are ignored.
func ParsePrivateKey(s string) (ed25519.PrivateKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("private key: empty")
	}
	if strings.HasPrefix(s, "-----BEGIN") {
		block, rest := pem.Decode([]byte(s))
		if block == nil {
			return nil, errors.New("private key: PEM block does not parse")
		}
		if strings.TrimSpace(string(rest)) != "" {
			return nil, errors.New("private key: more than one PEM block")
		}
		if block.Type != "PRIVATE KEY" {
			return nil, fmt.Errorf("private key: PEM block is %q, want \"PRIVATE KEY\" (PKCS#8)", block.Type)
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		ek, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("private key: is a %T, want an Ed25519 key", k)
		}
		return ek, nil
	}
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	seed, err := enc.Strict().DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("private key: neither a PKCS#8 PEM block nor a base64 seed")
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("private key: seed must be %d bytes, got %d", ed25519.SeedSize, len(seed))
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// checkKeyID reports why id cannot be a key id.
func checkKeyID(id string) error {
	if id == "" {
		return errors.New("id is empty")
	}
	if len(id) > maxKeyIDLen {
		return fmt.Errorf("id must be at most %d characters, got %d", maxKeyIDLen, len(id))
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return errors.New("id may hold only A-Z, a-z, 0-9, '_', '-' and '.'")
		}
	}
	return nil
}

// checkKeys reports every problem of a key list: none, a bad id, a
// repeated id, a private key of the wrong size, or a key used twice.
func checkKeys(keys []SigningKey) error {
	if len(keys) == 0 {
		return errors.New("no signing keys: at least one is needed")
	}
	var errs []error
	for i, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			errs = append(errs, fmt.Errorf("signing key %d of %d (%q): %w", i+1, len(keys), k.ID, err))
			continue
		}
		if len(k.PrivateKey) != ed25519.PrivateKeySize {
			errs = append(errs, fmt.Errorf("signing key %q: private key must be %d bytes, got %d", k.ID, ed25519.PrivateKeySize, len(k.PrivateKey)))
			continue
		}
		if !ed25519.NewKeyFromSeed(k.PrivateKey.Seed()).Equal(k.PrivateKey) {
			errs = append(errs, fmt.Errorf("signing key %q: private key's public half does not match its seed", k.ID))
			continue
		}
		for _, o := range keys[:i] {
			if o.ID == k.ID {
				errs = append(errs, fmt.Errorf("signing key %q: id is used by more than one key", k.ID))
				break
			}
			if len(o.PrivateKey) == ed25519.PrivateKeySize && o.PrivateKey.Public().(ed25519.PublicKey).Equal(k.PrivateKey.Public()) {
				errs = append(errs, fmt.Errorf("signing key %q: same key as %q", k.ID, o.ID))
				break
			}
		}
	}
	return errors.Join(errs...)
}
