package guard

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// The test's room, client and clock.
var (
	t0         = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)
	testRoom   = "sale"
	testClient = netip.MustParsePrefix("203.0.113.0/24")
)

// testKey is a key whose secret is derived from its id, so tests and the
// fuzz corpus agree on it.
func testKey(id string) usher.Key {
	s := sha256.Sum256([]byte("usher test key " + id))
	return usher.Key{ID: id, Secret: s[:]}
}

// MustPoW returns a PoW over test keys with the ids, the first signing.
func MustPoW(tb testing.TB, ids ...string) *PoW {
	tb.Helper()
	keys := make([]usher.Key, len(ids))
	for i, id := range ids {
		keys[i] = testKey(id)
	}
	p, err := NewPoW(keys, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// MustIssue issues a challenge for the test room and client at t0.
func MustIssue(tb testing.TB, p *PoW, difficulty int) Challenge {
	tb.Helper()
	c, err := p.Issue(testRoom, testClient, difficulty, t0)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// MustSolve solves a challenge with the native solver.
func MustSolve(tb testing.TB, challenge string, difficulty int) string {
	tb.Helper()
	n, err := Solve(context.Background(), challenge, difficulty)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// independentCheck re-does every check of Verify with nothing of this
// package's code but the layout: crypto/hmac and crypto/hkdf for the MAC,
// the standard decoder, math/bits for the hash. It returns "" when the
// solution is good, else why not.
func independentCheck(keys []usher.Key, challenge, n, room string, client netip.Prefix, minDifficulty int, now time.Time, lifetime, skew time.Duration) string {
	if n == "" || len(n) > 16 || (len(n) > 1 && n[0] == '0') || strings.Trim(n, "0123456789") != "" {
		return "counter"
	}
	if strings.Trim(challenge, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.") != "" {
		return "alphabet"
	}
	encPayload, encMAC, ok := strings.Cut(challenge, ".")
	if !ok {
		return "no dot"
	}
	payload, err1 := b64.DecodeString(encPayload)
	gotMAC, err2 := b64.DecodeString(encMAC)
	if err1 != nil || err2 != nil || len(gotMAC) != 16 || len(payload) < 2 || payload[0] != 1 {
		return "encoding"
	}
	kl := int(payload[1])
	if len(payload) != 2+kl+8+1+16+4+4 {
		return "length"
	}
	var secret []byte
	for _, k := range keys {
		if k.ID == string(payload[2:2+kl]) {
			secret = k.Secret
		}
	}
	if secret == nil {
		return "key"
	}
	macKey, err := hkdf.Key(sha256.New, secret, nil, "usher proof of work v1", 32)
	if err != nil {
		return "hkdf"
	}
	m := hmac.New(sha256.New, macKey)
	m.Write(payload)
	if len(room) > 255 {
		return "room"
	}
	m.Write([]byte{byte(len(room))})
	m.Write([]byte(room))
	if !client.IsValid() {
		return "client"
	}
	c := client.Masked()
	if a := c.Addr(); a.Is4In6() && c.Bits() >= 96 {
		c = netip.PrefixFrom(a.Unmap(), c.Bits()-96).Masked()
	}
	if c.Addr().Is4() {
		a := c.Addr().As4()
		m.Write(append([]byte{4, byte(c.Bits())}, a[:]...))
	} else {
		a := c.Addr().As16()
		m.Write(append([]byte{6, byte(c.Bits())}, a[:]...))
	}
	if !hmac.Equal(m.Sum(nil)[:16], gotMAC) {
		return "mac"
	}
	rest := payload[2+kl:]
	issued := time.Unix(int64(binary.BigEndian.Uint64(rest)), 0)
	d := int(rest[8])
	if d < 1 || d > 32 || d < minDifficulty {
		return "difficulty"
	}
	if issued.After(now.Add(skew)) || !now.Before(issued.Add(lifetime)) {
		return "time"
	}
	sum := sha256.Sum256([]byte(challenge + ":" + n))
	zeros := 0
	for _, b := range sum {
		if b != 0 {
			zeros += bits.LeadingZeros8(b)
			break
		}
		zeros += 8
	}
	if zeros < d {
		return "hash"
	}
	return ""
}
