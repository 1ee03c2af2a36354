package verify_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

func TestMiddleware(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	good := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	expired := func() string {
		c := tokentest.Claims()
		c.IssuedAt = tokentest.Now.Add(-time.Hour)
		return tokentest.MustSign(t, s.Signer, c)
	}()
	var seen *verify.Claims
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := verify.ClaimsFrom(r.Context())
		if !ok {
			t.Error("no claims in the context")
		}
		seen = &c
		_, _ = w.Write([]byte("inside"))
	})
	withRoom := mustVerifier(t, js, newClock(), verify.Options{RoomURL: "https://shop.example/"}).Middleware(next)
	noRoom := mustVerifier(t, js, newClock(), verify.Options{Header: "X-Token"}).Middleware(next)
	const html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"

	for _, tc := range []struct {
		name     string
		h        http.Handler
		method   string
		header   string
		tok      string
		accept   string
		status   int
		reason   string
		location string
	}{
		{"valid", withRoom, "GET", "X-Usher-Admission", good, html, 200, "", ""},
		{"valid POST", withRoom, "POST", "X-Usher-Admission", good, "", 200, "", ""},
		{"valid, own header", noRoom, "GET", "X-Token", good, "", 200, "", ""},
		{"token in another header", noRoom, "GET", "X-Usher-Admission", good, "", 401, "missing_token", ""},
		{"browser without token", withRoom, "GET", "", "", html, 302, "", "https://shop.example/"},
		{"browser HEAD without token", withRoom, "HEAD", "", "", "text/html", 302, "", "https://shop.example/"},
		{"browser with expired token", withRoom, "GET", "X-Usher-Admission", expired, html, 302, "", "https://shop.example/"},
		{"html refused with q=0", withRoom, "GET", "", "", "text/html;q=0, application/json", 401, "missing_token", ""},
		{"API without token", withRoom, "GET", "", "", "application/json", 401, "missing_token", ""},
		{"curl without token", withRoom, "GET", "", "", "*/*", 401, "missing_token", ""},
		{"form POST without token", withRoom, "POST", "", "", html, 401, "missing_token", ""},
		{"expired API", withRoom, "GET", "X-Usher-Admission", expired, "", 401, "expired", ""},
		{"garbage", withRoom, "GET", "X-Usher-Admission", "abc", "", 401, "malformed", ""},
		{"no room url", noRoom, "GET", "", "", html, 401, "missing_token", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seen = nil
			r := httptest.NewRequest(tc.method, "/checkout", nil)
			if tc.tok != "" {
				r.Header.Set(tc.header, tc.tok)
			}
			if tc.accept != "" {
				r.Header.Set("Accept", tc.accept)
			}
			rec := httptest.NewRecorder()
			tc.h.ServeHTTP(rec, r)
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d (%s)", rec.Code, tc.status, rec.Body)
			}
			if tc.status == 200 {
				if seen == nil || seen.Subject != "deadbeef01234567" || seen.Room != tokentest.Room {
					t.Errorf("claims = %+v", seen)
				}
				return
			}
			if seen != nil {
				t.Fatal("a refused request reached the handler")
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q", cc)
			}
			if tc.location != "" && rec.Header().Get("Location") != tc.location {
				t.Errorf("Location = %q, want %q", rec.Header().Get("Location"), tc.location)
			}
			if tc.reason != "" {
				var body struct{ Error, Message, RoomURL string }
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					t.Fatalf("body %q: %v", rec.Body, err)
				}
				if body.Error != tc.reason || body.Message == "" {
					t.Errorf("body = %+v, want error %q", body, tc.reason)
				}
				if rec.Header().Get("WWW-Authenticate") == "" {
					t.Error("401 without WWW-Authenticate")
				}
			}
		})
	}
}

func TestMiddlewareKeysUnavailable(t *testing.T) {
	s := tokentest.New(t)
	js := newJWKSServer(t, s.Signer)
	js.fail(http.StatusServiceUnavailable)
	h := mustVerifier(t, js, newClock(), verify.Options{RoomURL: "/"}).Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("reached the handler")
	}))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set(verify.DefaultHeader, tokentest.MustSign(t, s.Signer, tokentest.Claims()))
	r.Header.Set("Accept", "text/html")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("status %d, Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestRevoke(t *testing.T) {
	rec := httptest.NewRecorder()
	verify.Revoke(rec)
	rec.WriteHeader(http.StatusNoContent)
	if got := rec.Result().Header.Get("Usher-Command"); got != "revoke" {
		t.Errorf("Usher-Command = %q", got)
	}
}

func TestClaimsFrom(t *testing.T) {
	if _, ok := verify.ClaimsFrom(context.Background()); ok {
		t.Error("claims in an empty context")
	}
	ctx := verify.NewContext(context.Background(), verify.Claims{Subject: "x"})
	if c, ok := verify.ClaimsFrom(ctx); !ok || c.Subject != "x" {
		t.Errorf("ClaimsFrom = %+v, %v", c, ok)
	}
}

// TestMiddlewareCorpus runs the shared corpus through the middleware:
// only the valid tokens reach the handler; the rest get 401 naming a
// reason the corpus expects.
func TestMiddlewareCorpus(t *testing.T) {
	s := tokentest.New(t)
	reached := false
	h := mustVerifier(t, newJWKSServer(t, s.Signer), newClock(), verify.Options{Issuer: tokentest.Issuer}).
		Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached = true }))
	for _, c := range s.Cases {
		t.Run(c.Name, func(t *testing.T) {
			reached = false
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set(verify.DefaultHeader, c.Token)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			if c.Valid {
				if rec.Code != 200 || !reached {
					t.Errorf("status %d, reached %v: %s", rec.Code, reached, rec.Body)
				}
				return
			}
			if reached || rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, reached %v", rec.Code, reached)
			}
			var body struct{ Error string }
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if body.Error == "missing_token" && c.Token == "" {
				return // an empty header is no token
			}
			if !slices.Contains(c.Reasons, body.Error) {
				t.Errorf("error %q, want one of %q", body.Error, c.Reasons)
			}
		})
	}
}
