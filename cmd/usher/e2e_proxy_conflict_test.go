package main

import (
	"net/http"
	"testing"
)

// TestE2EForwardAuthConflictingURIs: a question whose headers describe two
// different requests (the proxy's X-Original-URI and a visitor's
// X-Forwarded-Uri passed on) must not be answered for either.
// Behind an nginx that sets only X-Original-URI and passes the visitor's
// headers on, a visitor who sends X-Forwarded-Uri: /static/x.css would be
// asked about as the bypassed path: usher refuses (400) a question whose
// X-Forwarded-Uri, X-Original-URI and X-Original-URL disagree.
func TestE2EForwardAuthConflictingURIs(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rig := newProxyRig(t)
	// Fill the room's one place.
	first := newVisitor(t, "first", wantHTML)
	req, _ := http.NewRequest(http.MethodGet, "http://"+rig.authAddr+"/__usher/auth?mode=nginx", nil)
	req.Header.Set("X-Original-URI", "/beer")
	req.Header.Set("X-Forwarded-Host", "shop.example")
	resp, err := first.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req.Header.Set("X-Forwarded-Uri", "/static/x.css") // the visitor's, passed on
	resp, err = newVisitor(t, "liar", wantHTML).client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("X-Original-URI /beer and X-Forwarded-Uri /static/x.css: %d, let through as the bypassed path", resp.StatusCode)
	}
}
