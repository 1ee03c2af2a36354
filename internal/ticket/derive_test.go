package ticket

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestDeriveSecret: each purpose and each key has its own secret, never
// the key's secret itself, and the same on every call (every node).
func TestDeriveSecret(t *testing.T) {
	a, b := testKey("a"), testKey("b")
	seen := map[string]string{}
	for _, k := range []usher.Key{a, b} {
		for _, p := range []string{PurposeBinding, PurposeClientLimit} {
			s := DeriveSecret(k, p)
			if len(s) != 32 || bytes.Equal(s, k.Secret) {
				t.Fatalf("DeriveSecret(%s, %q) = %x: want 32 bytes, not the key's secret", k.ID, p, s)
			}
			if !bytes.Equal(s, DeriveSecret(k, p)) {
				t.Fatalf("DeriveSecret(%s, %q) differs between calls", k.ID, p)
			}
			if o, dup := seen[string(s)]; dup {
				t.Fatalf("DeriveSecret(%s, %q) = the secret of %s", k.ID, p, o)
			}
			seen[string(s)] = k.ID + " " + p
		}
	}
}

// TestBindingRotation: a binding made under a key still opens for the same
// data once another key seals in front of it, and never for other data or
// under a ring without that key.
func TestBindingRotation(t *testing.T) {
	old := MustRing(t, "old")
	rotated := MustRing(t, "new", "old")
	gone := MustRing(t, "new")
	data, other := []byte("room/10.1.2.0/24/agent"), []byte("room/10.9.9.0/24/agent")
	b := old.Binding(data)
	if b < legacyBindings {
		t.Fatalf("Binding = %#x: want at least 2^32", b)
	}
	if !old.Bound(b, data) || !rotated.Bound(b, data) {
		t.Fatal("a binding under a key in the ring does not open")
	}
	if rotated.Binding(data) == b {
		t.Fatal("the new sealing key gives the old key's binding")
	}
	if gone.Bound(b, data) {
		t.Fatal("a binding under a key out of the ring opens")
	}
	if old.Bound(b, other) || old.Bound(0, data) {
		t.Fatal("a binding opens for other data, or zero opens")
	}
}

// TestBindingLegacy: a ticket with the 32-bit binding of earlier releases
// still opens (its other fields intact), and its binding matches no keyed
// binding, so a bound one is a new visitor; a 64-bit binding round-trips,
// and a payload with both flags is refused.
func TestBindingLegacy(t *testing.T) {
	r := MustRing(t, "k")
	tk := usher.Ticket{VisitorID: [8]byte{1}, State: usher.Admitted, ArrivedAt: time.UnixMilli(1_800_000_000_000).UTC(), Binding: r.Binding([]byte("x"))}
	got, err := r.Open(MustSeal(t, r, &tk), testRoom, testCookie)
	if err != nil {
		t.Fatal(err)
	}
	if got.Binding != tk.Binding {
		t.Fatalf("Binding = %#x, want %#x", got.Binding, tk.Binding)
	}
	// The payload as the 32-bit format wrote it (no optional field but
	// the binding: flags 0 in one byte, jitter 0 in the last).
	tk.Binding = 0
	plain := appendPayload(nil, &tk)
	withFlags := func(flags uint64, binding []byte) []byte {
		b := append([]byte(nil), plain[:9]...)
		b = binary.AppendUvarint(b, flags)
		b = append(b, plain[10:len(plain)-1]...)
		b = append(b, binding...)
		return append(b, plain[len(plain)-1])
	}
	legacy := withFlags(flagBinding, []byte{0xfe, 0xed, 0xfa, 0xce})
	old, err := decodePayload(legacy, formatVersion)
	if err != nil {
		t.Fatalf("a 32-bit binding does not decode: %v", err)
	}
	if old.Binding != 0xfeedface || old.State != usher.Admitted {
		t.Fatalf("decoded %+v", old)
	}
	if r.Bound(old.Binding, []byte("x")) {
		t.Fatal("a 32-bit binding is bound")
	}
	both := withFlags(flagBinding|flagBinding64, []byte{0xfe, 0xed, 0xfa, 0xce, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	if _, err := decodePayload(both, formatVersion); err == nil {
		t.Fatal("a payload with both binding flags decodes")
	}
}

// TestBindingIsHMAC: a binding is HMAC-SHA256 of the data under the
// derived secret (crypto/hmac computes the reference), all 64 bits; and
// none is below 2^32.
func TestBindingIsHMAC(t *testing.T) {
	r := MustRing(t, "k")
	for _, data := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("agent"), 100)} {
		m := hmac.New(sha256.New, DeriveSecret(testKey("k"), PurposeBinding))
		m.Write(data)
		want := keyedBinding(binary.BigEndian.Uint64(m.Sum(nil)))
		if got := r.Binding(data); got != want {
			t.Fatalf("Binding(%d bytes) = %#x, want %#x", len(data), got, want)
		}
	}
	if keyedBinding(0xfeedface) < legacyBindings || keyedBinding(1<<40) != 1<<40 {
		t.Fatal("keyedBinding maps a legacy value to itself, or changes a keyed one")
	}
}
