package main

import (
	"encoding/json"
	"testing"

	"github.com/usherhq/usher/internal/guard"
)

// powRoom asks every new visitor for a proof of work, even with free
// places (always), at a difficulty a test solves at once.
const powRoom = `listen: %s
trusted_proxies: [127.0.0.1/8]
store:
  embedded:
    path: %s
rooms:
  - id: shop
    name: Seal Brewing shop
    origin: %s
    routes:
      - path: /
    total_active_users: 100
    new_users_per_minute: 100
    session_duration: 1m
    json_response_enabled: true
    proof_of_work:
      difficulty: 4
      always: true
`

// checkProofOfWork: an app is asked for a proof of work through the proxy,
// solves it, is admitted with the solution, and stays admitted on its next
// request without one: the ticket cookie of the admitting answer reached
// it, although that answer also clears the solution's cookie.
func checkProofOfWork(t *testing.T, rig *proxyRig) {
	t.Helper()
	site := rig.proxyURL
	app := newVisitor(t, "app", wantJSON)
	a := app.get(t, site, "/beer")
	var ch guard.ChallengeBody
	if err := json.Unmarshal([]byte(a.body), &ch); err != nil || ch.Challenge.Challenge == "" || a.fromOrigin() {
		t.Fatalf("a new visitor: want the challenge's JSON, got %v", a)
	}
	n, err := guard.Solve(t.Context(), ch.Challenge.Challenge, ch.Challenge.Difficulty)
	if err != nil {
		t.Fatal(err)
	}
	a = app.get(t, site, "/beer", ch.Challenge.Header, ch.Challenge.Challenge+"."+n)
	if !a.fromOrigin() {
		t.Fatalf("with the solution: want the origin's page, got %v", a)
	}
	if app.ticket(t, site) == "" {
		t.Fatalf("admitted with the solution, but no ticket cookie reached the visitor (Set-Cookie: %q)", a.header.Values("Set-Cookie"))
	}
	if a = app.get(t, site, "/cart"); !a.fromOrigin() {
		t.Fatalf("the next request, with the ticket: want the origin's page, got %v", a)
	}
}

// TestE2ENginxProofOfWork: a proof-of-work room behind nginx.
// usher's answer that admits a visitor with a solution carries two
// Set-Cookie headers, and nginx before 1.23 keeps only the first in
// $upstream_http_set_cookie: usher sends the ticket's first.
func TestE2ENginxProofOfWork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rig := newProxyRigWith(t, powRoom)
	runNginxRecipe(t, rig)
	checkProofOfWork(t, rig)
}

// TestE2ECaddyProofOfWork: a proof-of-work room behind Caddy, whose
// copy_response_headers passes on every Set-Cookie.
func TestE2ECaddyProofOfWork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rig := newProxyRigWith(t, powRoom)
	startCaddy(t, rig)
	checkProofOfWork(t, rig)
}

// TestE2EHAProxyProofOfWork: a proof-of-work room behind HAProxy, whose
// Lua action keeps every Set-Cookie.
func TestE2EHAProxyProofOfWork(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	rig := newProxyRigWith(t, powRoom)
	startHAProxy(t, rig)
	checkProofOfWork(t, rig)
}
