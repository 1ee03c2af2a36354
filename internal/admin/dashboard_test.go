package admin

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardFiles: the page and its two files are served without a
// token, with a strict Content-Security-Policy and their types; nothing
// else is served without one; the page loads nothing from elsewhere and
// has no inline script or style.
func TestDashboardFiles(t *testing.T) {
	a := newAPITest(t, nil, "")
	for _, tc := range []struct{ path, ctype, contains string }{
		{"/", "text/html; charset=utf-8", `<input type="password" id="token"`},
		{"/dashboard/app.js", "text/javascript; charset=utf-8", `"/api/v1/live"`},
		{"/dashboard/app.css", "text/css; charset=utf-8", ":focus-visible"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			rec := a.do(t, "GET", tc.path, "", "", "")
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
			h := rec.Header()
			if h.Get("Content-Type") != tc.ctype || h.Get("Content-Security-Policy") != dashboardCSP ||
				h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
				t.Fatalf("headers %v", h)
			}
			body := rec.Body.String()
			if !strings.Contains(body, tc.contains) {
				t.Fatalf("no %q in the body", tc.contains)
			}
			// Nothing from elsewhere: the only absolute URL is the SVG
			// namespace.
			for _, u := range regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}[^\s"')]*`).FindAllString(body, -1) {
				if u != "http://www.w3.org/2000/svg" {
					t.Errorf("absolute URL %q", u)
				}
			}
		})
	}
	for _, directive := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "form-action 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(dashboardCSP, directive) {
			t.Errorf("the CSP lacks %s", directive)
		}
	}
	page := a.do(t, "GET", "/", "", "", "").Body.String()
	if regexp.MustCompile(`<script(?:\s[^>]*)?>[^<]`).MatchString(page) || strings.Contains(page, "style=") || regexp.MustCompile(`\son[a-z]+=`).MatchString(page) {
		t.Fatal("the page has inline script or style, which its CSP refuses")
	}
	// The login form never sends the token in a URL, even without script.
	if !strings.Contains(page, `<form id="login" method="post"`) {
		t.Fatal("the login form is not a POST")
	}

	for _, path := range []string{"/dashboard/", "/dashboard/index.html", "/dashboard/x.js", "/favicon.ico", "/api/v1/live", "/api/v1/whoami", "/index.html"} {
		rec := a.do(t, "GET", path, "", "", "")
		if rec.Code != http.StatusUnauthorized && rec.Code != http.StatusNotFound {
			t.Errorf("GET %s without a token: %d", path, rec.Code)
		}
		if rec.Code == http.StatusNotFound && !strings.HasPrefix(path, "/dashboard/") {
			t.Errorf("GET %s without a token: 404 before 401", path)
		}
	}
	if rec := a.do(t, "POST", "/", "", "", "x"); rec.Code != http.StatusUnauthorized {
		t.Errorf("POST / without a token: %d", rec.Code)
	}
}

// TestWhoami: the token's name and role; 401 without one.
func TestWhoami(t *testing.T) {
	a := newAPITest(t, nil, "")
	for tok, want := range map[string]WhoamiView{writeToken: {"admin", "write"}, readToken: {"viewer", "read"}} {
		rec := a.do(t, "GET", "/api/v1/whoami", tok, "", "")
		if got := MustDecode[WhoamiView](t, rec); rec.Code != http.StatusOK || got != want {
			t.Errorf("whoami: %d %+v, want %+v", rec.Code, got, want)
		}
	}
	if rec := a.do(t, "GET", "/api/v1/whoami", "", "", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("whoami without a token: %d", rec.Code)
	}
}
