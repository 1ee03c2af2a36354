package main

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admin"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	// The real admin handler: /healthz answers without a token.
	ok := httptest.NewServer(admin.New(admin.Options{Token: "secret", Version: "v0.3.0"}))
	t.Cleanup(ok.Close)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "store unavailable", http.StatusServiceUnavailable)
	}))
	t.Cleanup(down.Close)
	moved := httptest.NewServer(http.RedirectHandler("/elsewhere", http.StatusFound))
	t.Cleanup(moved.Close)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	// A port nobody listens on: bind one, note it, close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String() + "/healthz"
	ln.Close()

	cases := []struct {
		name     string
		args     []string
		code     int
		out, err []string // substrings of stdout and stderr
	}{
		{"healthy", []string{"--url", ok.URL + "/healthz"}, 0, []string{"200 OK"}, nil},
		{"503", []string{"--url", down.URL + "/healthz"}, 1, nil, []string{"503 Service Unavailable", "store unavailable"}},
		{"redirect is not healthy", []string{"--url", moved.URL + "/healthz"}, 1, nil, []string{"302 Found"}},
		{"token-protected path", []string{"--url", ok.URL + "/v1/rooms"}, 1, nil, []string{"401 Unauthorized"}},
		{"connection refused", []string{"--url", refused}, 1, nil, []string{"usher: health:", "connection refused"}},
		{"timeout", []string{"--url", slow.URL + "/healthz", "--timeout", "100ms"}, 1, nil, []string{"no answer within 100ms"}},
		{"unknown flag", []string{"--nope"}, 2, nil, []string{"-nope"}},
		{"bad timeout", []string{"--timeout", "soon"}, 2, nil, []string{"-timeout"}},
		{"zero timeout", []string{"--timeout", "0s"}, 2, nil, []string{"--timeout: must be more than 0"}},
		{"not a URL", []string{"--url", "127.0.0.1:9090/healthz"}, 2, nil, []string{"--url: must be an absolute http or https URL"}},
		{"extra argument", []string{"now"}, 2, nil, []string{`unexpected argument "now"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runMain(t, append([]string{"health"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("usher health %v: exit %d, want %d\nstdout: %s\nstderr: %s", tc.args, code, tc.code, out, errs)
			}
			for _, want := range tc.out {
				if !strings.Contains(out, want) {
					t.Errorf("stdout lacks %q: %q", want, out)
				}
			}
			for _, want := range tc.err {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q: %q", want, errs)
				}
			}
			if tc.code == 0 && errs != "" {
				t.Errorf("healthy, yet stderr: %q", errs)
			}
			if tc.code != 0 && out != "" {
				t.Errorf("unhealthy, yet stdout: %q", out)
			}
		})
	}
}
