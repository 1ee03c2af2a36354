package ticket

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"

	"github.com/usherhq/usher"
)

// Purposes of the secrets DeriveSecret makes. Each keys one use, so that a
// ring key's secret keys nothing but the ticket AEAD, and no output of one
// use tells anything of another.
const (
	// PurposeBinding keys ticket bindings (Ring.Binding).
	PurposeBinding = "usher ticket binding v1"
	// PurposeClientLimit keys the per-client limit's sketch (limit.Hasher).
	PurposeClientLimit = "usher client limit v1"
)

// DeriveSecret returns the 32-byte secret of purpose under key:
// HMAC-SHA256, under the key's secret (32 random bytes, so no extract step
// is needed), of a fixed label and the purpose. Every node sharing a key
// ring derives the same secret.
func DeriveSecret(key usher.Key, purpose string) []byte {
	m := hmac.New(sha256.New, key.Secret)
	m.Write([]byte("usher derived secret\x00"))
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// legacyBindings bounds the bindings of the 32-bit format (an unkeyed
// hash, before payload flag flagBinding64): no binding Ring.Binding
// computes is below it, so those tickets are bound to no client any more,
// and open as new visitors.
const legacyBindings = 1 << 32

// keyedBinding makes a 64-bit HMAC output a binding: itself, unless it is
// below legacyBindings (one in 2^32), where its top bit is set.
func keyedBinding(h uint64) uint64 {
	if h < legacyBindings {
		return h | 1<<63
	}
	return h
}

// Binding returns the binding of data (what ties a ticket to its client:
// the room, the client's prefix, its user agent) under the sealing key:
// the first 8 bytes of HMAC-SHA256 under the key's PurposeBinding secret
// (never below 2^32, see legacyBindings). Without the secret, nobody can
// tell which data share a binding. A nil or empty ring gives 0.
func (r *Ring) Binding(data []byte) uint64 {
	if r == nil || len(r.keys) == 0 {
		return 0
	}
	return bindingOf(r.keys[0].bind, data)
}

// Bound reports whether b is the binding of data under any key of the
// ring, so that a ticket bound under a key rotated out but still in the
// ring still opens for its client. A zero b is never bound.
func (r *Ring) Bound(b uint64, data []byte) bool {
	if r == nil || b == 0 {
		return false
	}
	found := 0
	for i := range r.keys {
		var x, y [8]byte
		binary.BigEndian.PutUint64(x[:], b)
		binary.BigEndian.PutUint64(y[:], bindingOf(r.keys[i].bind, data))
		found |= boolInt(hmac.Equal(x[:], y[:]))
	}
	return found == 1
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// macKey is an HMAC-SHA256 key with its pads ready, so that a binding
// costs two hashes and no setup.
type macKey struct {
	ipad, opad [sha256.BlockSize]byte
}

// newMACKey returns the HMAC-SHA256 key of secret (at most a block).
func newMACKey(secret []byte) *macKey {
	k := &macKey{}
	copy(k.ipad[:], secret)
	copy(k.opad[:], secret)
	for i := range k.ipad {
		k.ipad[i] ^= 0x36
		k.opad[i] ^= 0x5c
	}
	return k
}

// bindingOf is the keyed binding of data under k: HMAC-SHA256's first 8
// bytes (keyedBinding).
func bindingOf(k *macKey, data []byte) uint64 {
	h := sha256.New()
	h.Write(k.ipad[:])
	h.Write(data)
	var out [sha256.BlockSize + sha256.Size]byte
	copy(out[:], k.opad[:])
	h.Sum(out[sha256.BlockSize:sha256.BlockSize])
	sum := sha256.Sum256(out[:])
	return keyedBinding(binary.BigEndian.Uint64(sum[:8]))
}
