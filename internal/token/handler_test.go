package token_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
)

func TestJWKSHandler(t *testing.T) {
	s := tokentest.New(t).Signer
	h := s.JWKSHandler()

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/__usher/jwks.json", nil))
	if rec.Code != 200 || rec.Body.String() != string(s.JWKS()) {
		t.Fatalf("GET = %d %q", rec.Code, rec.Body)
	}
	for k, v := range map[string]string{
		"Content-Type":  "application/jwk-set+json",
		"Cache-Control": "public, max-age=300",
	} {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	etag := rec.Header().Get("ETag")
	if !strings.HasPrefix(etag, `"`) {
		t.Errorf("ETag = %q", etag)
	}

	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("HEAD", "/__usher/jwks.json", nil))
	if rec.Code != 200 || rec.Body.Len() != 0 || rec.Header().Get("Content-Length") != strconv.Itoa(len(s.JWKS())) {
		t.Errorf("HEAD = %d, body %d bytes, Content-Length %q", rec.Code, rec.Body.Len(), rec.Header().Get("Content-Length"))
	}

	rec = httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/__usher/jwks.json", nil)
	r.Header.Set("If-None-Match", `"other", `+etag)
	h.ServeHTTP(rec, r)
	if rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("If-None-Match = %d %q", rec.Code, rec.Body)
	}

	for _, m := range []string{"POST", "PUT", "DELETE"} {
		rec = httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/__usher/jwks.json", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s = %d, Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
}

func TestVerifyHandler(t *testing.T) {
	s := tokentest.New(t)
	good := tokentest.MustSign(t, s.Signer, tokentest.Claims())
	expired := tokentest.MustSign(t, s.Signer, func() token.Claims {
		c := tokentest.Claims()
		c.IssuedAt = tokentest.Now.Add(-time.Hour)
		return c
	}())
	h := s.Signer.Verifier().VerifyHandler(token.HandlerOptions{Header: "X-Token", Now: func() time.Time { return tokentest.Now }})
	form := func(v url.Values) *http.Request {
		r := httptest.NewRequest("POST", "/__usher/verify", strings.NewReader(v.Encode()))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		return r
	}
	withHeader := func(r *http.Request, k, v string) *http.Request { r.Header.Set(k, v); return r }
	for _, tc := range []struct {
		name   string
		req    *http.Request
		status int
		want   map[string]any
	}{
		{"bearer", withHeader(httptest.NewRequest("GET", "/__usher/verify?room=sale", nil), "Authorization", "Bearer "+good), 200,
			map[string]any{"valid": true, "room": "sale", "sub": "deadbeef01234567", "iss": "usher",
				"exp": float64(tokentest.Now.Unix() + 300), "admitted_at": float64(tokentest.Now.Unix() - 60),
				"queue_position": float64(42), "waited_s": float64(1020)}},
		{"bearer lowercase", withHeader(httptest.NewRequest("GET", "/__usher/verify?room=sale", nil), "Authorization", "bearer "+good), 200, map[string]any{"valid": true}},
		{"configured header", withHeader(httptest.NewRequest("GET", "/__usher/verify?room=sale", nil), "X-Token", good), 200, map[string]any{"valid": true}},
		{"query", httptest.NewRequest("GET", "/__usher/verify?room=sale&token="+good, nil), 200, map[string]any{"valid": true}},
		{"form", form(url.Values{"room": {"sale"}, "token": {good}}), 200, map[string]any{"valid": true, "room": "sale"}},
		{"expired", httptest.NewRequest("GET", "/__usher/verify?room=sale&token="+expired, nil), 401, map[string]any{"valid": false, "error": "expired", "room": "sale"}},
		{"other room", httptest.NewRequest("GET", "/__usher/verify?room=other&token="+good, nil), 401, map[string]any{"valid": false, "error": "wrong_audience"}},
		{"garbage", httptest.NewRequest("GET", "/__usher/verify?room=sale&token=abc", nil), 401, map[string]any{"valid": false, "error": "malformed"}},
		{"alg none", httptest.NewRequest("GET", "/__usher/verify?room=sale&token="+caseToken(t, s, "alg_none"), nil), 401, map[string]any{"valid": false, "error": "algorithm_not_allowed"}},
		{"no token", httptest.NewRequest("GET", "/__usher/verify?room=sale", nil), 401, map[string]any{"valid": false, "error": "missing_token"}},
		{"no room", httptest.NewRequest("GET", "/__usher/verify?token="+good, nil), 400, map[string]any{"valid": false, "error": "missing_room"}},
		{"PUT", httptest.NewRequest("PUT", "/__usher/verify?room=sale&token="+good, nil), 405, map[string]any{"valid": false, "error": "method_not_allowed"}},
		{"huge form", form(url.Values{"room": {"sale"}, "pad": {strings.Repeat("x", 20000)}}), 400, map[string]any{"valid": false, "error": "bad_request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, tc.req)
			if rec.Code != tc.status {
				t.Errorf("status = %d, want %d (%s)", rec.Code, tc.status, rec.Body)
			}
			if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q", cc)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var got map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %v, want %v (body %s)", k, got[k], v, rec.Body)
				}
			}
			if tc.status == 401 && !strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without WWW-Authenticate: Bearer")
			}
			if tc.status == 405 && rec.Header().Get("Allow") != "GET, HEAD, POST" {
				t.Errorf("Allow = %q", rec.Header().Get("Allow"))
			}
		})
	}
}

func caseToken(t *testing.T, s *tokentest.Setup, name string) string {
	t.Helper()
	for _, c := range s.Cases {
		if c.Name == name {
			return c.Token
		}
	}
	t.Fatalf("no case %q", name)
	return ""
}
