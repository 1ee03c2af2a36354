package ticket

import (
	"crypto/cipher"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/usherhq/usher"
	"golang.org/x/crypto/chacha20poly1305"
)

// SecretSize is the size of a key's secret in bytes.
const SecretSize = chacha20poly1305.KeySize

// maxKeyIDLen is the longest key id; the id's length is one byte of the
// format, and a short id keeps the cookie short.
const maxKeyIDLen = 16

// Ring is an immutable key ring: its first key seals, every key opens, so a
// key can be rotated out by putting a new one in front and dropping the old
// one once its tickets have expired. A Ring is safe for concurrent use.
type Ring struct {
	keys []ringKey
	// opened remembers the tickets this ring opened (Open).
	opened openCache
}

type ringKey struct {
	id   string
	aead cipher.AEAD
	bind *macKey // under the key's PurposeBinding secret
}

// NewRing returns a ring of keys; keys[0] seals. It reports every problem:
// no keys, an id that is not 1-16 characters of [A-Za-z0-9_-], a repeated
// id, a secret that is not 32 bytes, or a secret used by two keys.
func NewRing(keys []usher.Key) (*Ring, error) {
	if len(keys) == 0 {
		return nil, errors.New("key ring is empty: at least one key is needed")
	}
	var errs []error
	r := &Ring{keys: make([]ringKey, 0, len(keys))}
	for i, k := range keys {
		if k.ID == "" {
			errs = append(errs, fmt.Errorf("key %d of %d: id is empty", i+1, len(keys)))
			continue
		}
		if err := checkKeyID(k.ID); err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k.ID, err))
			continue
		}
		if err := checkSecret(k.Secret); err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k.ID, err))
			continue
		}
		if err := checkUnique(keys[:i], k); err != nil {
			errs = append(errs, err)
			continue
		}
		aead, err := chacha20poly1305.NewX(k.Secret)
		if err != nil {
			errs = append(errs, fmt.Errorf("key %q: %w", k.ID, err))
			continue
		}
		r.keys = append(r.keys, ringKey{id: k.ID, aead: aead, bind: newMACKey(DeriveSecret(k, PurposeBinding))})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// checkUnique reports whether an earlier key has k's id or k's secret.
// Secrets are compared in constant time.
func checkUnique(earlier []usher.Key, k usher.Key) error {
	for _, o := range earlier {
		if o.ID == k.ID {
			return fmt.Errorf("key %q: id is used by more than one key", k.ID)
		}
	}
	for _, o := range earlier {
		if subtle.ConstantTimeCompare(o.Secret, k.Secret) == 1 {
			return fmt.Errorf("key %q: same secret as key %q", k.ID, o.ID)
		}
	}
	return nil
}

// key returns the ring's key with the id, or nil.
func (r *Ring) key(id []byte) *ringKey {
	for i := range r.keys {
		if r.keys[i].id == string(id) {
			return &r.keys[i]
		}
	}
	return nil
}

// KeyID returns the id of the key that seals, or "" for a nil or zero Ring.
func (r *Ring) KeyID() string {
	if r == nil || len(r.keys) == 0 {
		return ""
	}
	return r.keys[0].id
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
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return errors.New("id may hold only A-Z, a-z, 0-9, '_' and '-'")
		}
	}
	return nil
}

func checkSecret(secret []byte) error {
	if len(secret) != SecretSize {
		return fmt.Errorf("secret must be %d bytes, got %d", SecretSize, len(secret))
	}
	return nil
}

// GenerateKey returns a key with the id and a random secret from
// crypto/rand.
func GenerateKey(id string) (usher.Key, error) {
	if err := checkKeyID(id); err != nil {
		return usher.Key{}, fmt.Errorf("key %q: %w", id, err)
	}
	secret := make([]byte, SecretSize)
	if _, err := rand.Read(secret); err != nil {
		return usher.Key{}, fmt.Errorf("key %q: read random secret: %w", id, err)
	}
	return usher.Key{ID: id, Secret: secret}, nil
}

// EncodeSecret returns secret in standard padded base64, the form config
// files and "usher keys new" use.
func EncodeSecret(secret []byte) string {
	return base64.StdEncoding.EncodeToString(secret)
}

// DecodeSecret decodes a 32-byte secret written as 64 hex characters or in
// base64, standard or URL-safe, padded or not. Spaces and newlines around it
// are ignored.
func DecodeSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) == 2*SecretSize {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	if !strings.HasSuffix(s, "=") {
		enc = enc.WithPadding(base64.NoPadding)
	}
	b, err := enc.Strict().DecodeString(s)
	if err != nil || strings.ContainsAny(s, "\r\n") {
		return nil, errors.New("secret is neither base64 nor 64 hex characters")
	}
	if err := checkSecret(b); err != nil {
		return nil, err
	}
	return b, nil
}
