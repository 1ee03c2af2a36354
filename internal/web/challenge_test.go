package web

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"
)

func challengeData(t *testing.T) PageData {
	t.Helper()
	for _, tt := range pageStates() {
		if tt.page == PageChallenge {
			return tt.data
		}
	}
	t.Fatal("no challenge page state")
	return PageData{}
}

func TestChallengePageContent(t *testing.T) {
	pd := challengeData(t)
	var buf bytes.Buffer
	if err := Render(&buf, PageChallenge, pd); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		`<html lang="en-US">`,
		`<title>Joining the line · Spring &lt;Sale&gt;</title>`,
		`<noscript><p class="lead">To join this line, your browser needs JavaScript. Please turn it on and reload this page.</p></noscript>`,
		`<div id="pow" hidden data-challenge="` + pd.Challenge + `" data-difficulty="18" data-cookie="__usher_pow" data-worker="/__usher/assets/pow.js"`,
		`aria-live="polite"`,
		`role="progressbar"`,
		"new Worker(",
		"Max-Age=300; SameSite=Lax",
		`"; Secure"`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Without JavaScript the page offers nothing but its message: no
	// refresh (it would only fetch a new challenge), no link, no form.
	for _, bad := range []string{`http-equiv="refresh"`, "<a ", "<form", "<iframe", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains %q", bad)
		}
	}
	if !strings.HasSuffix(page, "</html>\n") {
		t.Errorf("page ends %q", page[len(page)-40:])
	}
	pd.ChallengeCookie = "__usher_pow_drop"
	buf.Reset()
	if err := Render(&buf, PageChallenge, pd); err != nil || !strings.Contains(buf.String(), `data-cookie="__usher_pow_drop"`) {
		t.Errorf("cookie name not used: %v", err)
	}
}

func TestPowWorkerAsset(t *testing.T) {
	w := httptest.NewRecorder()
	Default().AssetHandler().ServeHTTP(w, httptest.NewRequest("GET", "/pow.js", nil))
	if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") ||
		w.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(w.Body.String(), "onmessage") {
		t.Errorf("GET /pow.js = %d %q", w.Code, w.Header().Get("Content-Type"))
	}
}
