package token_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/usherhq/usher/internal/token/tokentest"
)

func BenchmarkSign(b *testing.B) {
	s := tokentest.New(b).Signer
	c := tokentest.Claims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkVerify(b *testing.B) {
	s := tokentest.New(b).Signer
	v := s.Verifier()
	tok := tokentest.MustSign(b, s, tokentest.Claims())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok, tokentest.Room, tokentest.Now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyForged is the cost of refusing a token with a known kid
// and a bad signature, the most an attacker can make usher spend.
func BenchmarkVerifyForged(b *testing.B) {
	s := tokentest.New(b)
	v := s.Signer.Verifier()
	tok := caseTokenB(b, s, "signature_bit_flipped")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok, tokentest.Room, tokentest.Now); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkEd25519 measures the bare signature operations, the floor
// under Sign and Verify.
func BenchmarkEd25519(b *testing.B) {
	priv := ed25519.NewKeyFromSeed(make([]byte, 32))
	msg := make([]byte, 300)
	sig := ed25519.Sign(priv, msg)
	b.Run("Sign", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ed25519.Sign(priv, msg)
		}
	})
	b.Run("Verify", func(b *testing.B) {
		b.ReportAllocs()
		pub := priv.Public().(ed25519.PublicKey)
		for b.Loop() {
			if !ed25519.Verify(pub, msg, sig) {
				b.Fatal("bad")
			}
		}
	})
}

func caseTokenB(b *testing.B, s *tokentest.Setup, name string) string {
	for _, c := range s.Cases {
		if c.Name == name {
			return c.Token
		}
	}
	b.Fatalf("no case %q", name)
	return ""
}

// BenchmarkCacheSign is a visitor's token handed out again (the common
// case: every request of an admitted visitor within half the TTL).
func BenchmarkCacheSign(b *testing.B) {
	cache := tokentest.New(b).Signer.NewCache(0)
	c := tokentest.Claims()
	if _, err := cache.Sign(c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cache.Sign(c); err != nil {
			b.Fatal(err)
		}
	}
}
