package verify_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

func BenchmarkVerify(b *testing.B) {
	s := tokentest.New(b)
	v, err := verify.New(verify.Options{JWKSURL: newJWKSServer(b, s.Signer).URL(), Room: tokentest.Room, Now: newClock().Now})
	if err != nil {
		b.Fatal(err)
	}
	tok := tokentest.MustSign(b, s.Signer, tokentest.Claims())
	if _, err := v.Verify(tok); err != nil { // fetches the keys
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMiddleware(b *testing.B) {
	s := tokentest.New(b)
	v, err := verify.New(verify.Options{JWKSURL: newJWKSServer(b, s.Signer).URL(), Room: tokentest.Room, Now: newClock().Now})
	if err != nil {
		b.Fatal(err)
	}
	h := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(verify.DefaultHeader, tokentest.MustSign(b, s.Signer, tokentest.Claims()))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 {
		b.Fatal(w.Code)
	}
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
