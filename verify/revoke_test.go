package verify_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/usherhq/usher/verify"
)

// TestRevokeSession posts the token to the revoke endpoint next to the
// JWKS, with the room, and reports usher's refusal.
func TestRevokeSession(t *testing.T) {
	var got *http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		if r.Header.Get("Authorization") == "Bearer good" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer srv.Close()
	v, err := verify.New(verify.Options{JWKSURL: srv.URL + "/__usher/jwks.json", Room: "drop"})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.RevokeSession(context.Background(), "good"); err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/__usher/revoke" || got.URL.Query().Get("room") != "drop" {
		t.Fatalf("request %s %s", got.Method, got.URL)
	}
	if err := v.RevokeSession(context.Background(), "bad"); err == nil {
		t.Fatal("a refused revoke reported no error")
	}
}
