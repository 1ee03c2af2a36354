package token_test

import (
	"flag"
	"path/filepath"
	"testing"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzVerify from the tokentest corpus")

// TestWriteCorpus rewrites the committed seed corpus when run with
// -update-corpus (after the corpus in tokentest changes).
func TestWriteCorpus(t *testing.T) {
	if !*updateCorpus {
		t.Skip("run with -update-corpus to rewrite testdata/fuzz/FuzzVerify")
	}
	if err := tokentest.WriteCorpus(filepath.Join("testdata", "fuzz", "FuzzVerify"), tokentest.New(t).Cases); err != nil {
		t.Fatal(err)
	}
}

// FuzzVerify: Verify never panics, every refusal names a known reason,
// and anything it accepts is a genuine token for the room that an
// independent library accepts too.
func FuzzVerify(f *testing.F) {
	s := tokentest.New(f)
	v := s.Signer.Verifier()
	keys := jwksKeys(f, s.Signer.JWKS())
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := v.Verify(tok, tokentest.Room, tokentest.Now)
		if err != nil {
			if r := token.Reason(err); r == "invalid" {
				t.Fatalf("a refusal without a reason: %v", err)
			}
			return
		}
		if c.Room != tokentest.Room || c.Issuer != tokentest.Issuer || (c.KeyID != "k1" && c.KeyID != "k0") {
			t.Fatalf("accepted claims %+v", c)
		}
		if _, err := independentVerify(tok, keys, tokentest.Room, tokentest.Now); err != nil {
			t.Fatalf("usher accepted %q, golang-jwt refused it: %v", tok, err)
		}
	})
}
