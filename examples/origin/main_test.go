package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/token"
	"github.com/usherhq/usher/internal/token/tokentest"
	"github.com/usherhq/usher/verify"
)

// TestShop runs the shop's handler against a key set served by
// httptest, with tokens signed as usher signs them.
func TestShop(t *testing.T) {
	s := tokentest.New(t)
	jwks := httptest.NewServer(s.Signer.JWKSHandler())
	defer jwks.Close()
	v, err := verify.New(verify.Options{
		JWKSURL: jwks.URL + "/__usher/jwks.json",
		Room:    tokentest.Room,
		RoomURL: "http://usher.example/",
		Now:     func() time.Time { return tokentest.Now },
	})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	shop := httptest.NewServer(newHandler(v, slog.New(slog.NewTextHandler(&logs, nil))))
	defer shop.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	tok := tokentest.MustSign(t, s.Signer, tokentest.Claims())

	get := func(method, path, tok, accept string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(method, shop.URL+path, nil)
		if tok != "" {
			req.Header.Set(verify.DefaultHeader, tok)
		}
		req.Header.Set("Accept", accept)
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, body := get("GET", "/", tok, "text/html")
	if resp.StatusCode != 200 || !strings.Contains(body, "deadbeef01234567") || !strings.Contains(body, "17m0s") {
		t.Errorf("admitted visitor: %d %s", resp.StatusCode, body)
	}
	if !strings.Contains(logs.String(), "sub=deadbeef01234567") {
		t.Errorf("log = %s", logs.String())
	}

	resp, _ = get("GET", "/", "", "text/html")
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "http://usher.example/" {
		t.Errorf("browser without a token: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	other := tokentest.MustSign(t, tokentest.MustSigner(t, s.Ring, token.Options{}), func() token.Claims {
		c := tokentest.Claims()
		c.Room = "other"
		return c
	}())
	resp, body = get("GET", "/", other, "application/json")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(body, "wrong_audience") {
		t.Errorf("another room's token: %d %s", resp.StatusCode, body)
	}

	resp, _ = get("POST", "/checkout/done", tok, "")
	if resp.StatusCode != 200 || resp.Header.Get("Usher-Command") != "revoke" {
		t.Errorf("checkout: %d, Usher-Command %q", resp.StatusCode, resp.Header.Get("Usher-Command"))
	}
}

func TestRunBadFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"-room", ""}, &out); err == nil || !strings.Contains(err.Error(), "room is required") {
		t.Errorf("run = %v", err)
	}
	if err := run(t.Context(), []string{"-nope"}, &out); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

// syncBuffer is a bytes.Buffer safe for one writer and one reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestRun runs the real program on a free port and stops it.
func TestRun(t *testing.T) {
	s := tokentest.New(t)
	jwks := httptest.NewServer(s.Signer.JWKSHandler())
	defer jwks.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-listen", "127.0.0.1:0", "-jwks", jwks.URL + "/__usher/jwks.json", "-room", tokentest.Room}, &out)
	}()
	addr := regexp.MustCompile(`addr=(http://\S+)`)
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == ""; time.Sleep(5 * time.Millisecond) {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			url = m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("the shop did not open: %s", out.String())
		}
	}
	if strings.Contains(out.String(), "not available") {
		t.Errorf("keys reported unavailable: %s", out.String())
	}
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET without a token = %d, want 401", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run = %v", err)
	}
}
