package verify_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzVerify from the tokentest corpus")

// TestWriteCorpus rewrites the committed seed corpus when run with
// -update-corpus.
func TestWriteCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-corpus to rewrite testdata/fuzz/FuzzVerify")
	}
	if err := tokentest.WriteCorpus(filepath.Join("testdata", "fuzz", "FuzzVerify"), tokentest.New(t).Cases); err != nil {
		t.Fatal(err)
	}
}

// FuzzVerify: the hand-written parser never panics, names a reason for
// every refusal, and agrees with usher's own verifier (go-jose) both ways:
// what one accepts the other accepts, with the same claims.
func FuzzVerify(f *testing.F) {
	s := tokentest.New(f)
	u := s.Signer.Verifier()
	js := newJWKSServer(f, s.Signer)
	v, err := verify.New(verify.Options{JWKSURL: js.URL(), Room: tokentest.Room, Issuer: tokentest.Issuer, Now: newClock().Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		got, err := v.Verify(tok)
		want, uerr := u.Verify(tok, tokentest.Room, tokentest.Now)
		if err != nil && verify.Reason(err) == "invalid" {
			t.Fatalf("a refusal without a reason: %v", err)
		}
		if (err == nil) != (uerr == nil) {
			t.Fatalf("verify: %v; usher: %v; token %q", err, uerr, tok)
		}
		if err == nil && (got.Subject != want.Subject() || !got.Expiry.Equal(want.Expiry) || got.KeyID != want.KeyID || got.Room != want.Room) {
			t.Fatalf("claims %+v, usher's %+v", got, want)
		}
	})
}
