package gate_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// TestOriginRevokes: an origin's "Usher-Command: revoke" ends the
// visitor's session: the header never reaches the visitor, the cookie is
// dropped, the slot is free for the next visitor at once, and the old
// cookie, replayed, is a new visitor.
func TestOriginRevokes(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/logout" {
			w.Header().Set(gate.CommandHeader, "revoke")
		}
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, "bye")
	}))
	defer origin.Close()
	st, _ := local.Open(local.Options{})
	defer st.Close()
	keys := []usher.Key{mustKey(t, "k1")}
	ring, _ := ticket.NewRing(keys)
	signer, _ := token.New(keys, token.Options{})
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	room.Origin = origin.URL
	g, err := gate.New(gate.Options{Rooms: []*usher.Room{room}, Decider: admission.New(st, admission.Options{}), Sealer: ring,
		Tokens: &gate.Tokens{Signer: signer}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	get := func(path string, c *http.Cookie) (*http.Response, *http.Cookie) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if c != nil {
			req.AddCookie(c)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for _, sc := range resp.Cookies() {
			if sc.Name == room.CookieName() {
				return resp, sc
			}
		}
		return resp, nil
	}
	resp, cookie := get("/", nil)
	if resp.Header.Get("X-Origin") != "1" || cookie == nil {
		t.Fatal("the first visitor was not admitted")
	}
	resp, dropped := get("/logout", cookie)
	if resp.Header.Get(gate.CommandHeader) != "" {
		t.Fatal("the origin's command reached the visitor")
	}
	if dropped == nil || dropped.MaxAge >= 0 {
		t.Fatalf("the ticket was not dropped: %v", dropped)
	}
	if resp, _ := get("/", nil); resp.Header.Get("X-Origin") != "1" {
		t.Fatal("the revoked session's slot was not free for the next visitor")
	}
	if resp, _ := get("/again", cookie); resp.Header.Get("X-Origin") == "1" {
		t.Fatal("the revoked cookie, replayed, got in")
	}
}

// TestRevokeEndpoint: in a forward-auth setup the origin sends the
// admission token back to /__usher/revoke (verify.RevokeSession): the slot
// is free at once; a bad token changes nothing.
func TestRevokeEndpoint(t *testing.T) {
	room := fullRoom()
	a := newAuthStack(t, room)
	first := a.ask(t, gate.AuthPath, caddyHeaders("/drop/x"))
	tok := first.header.Get(token.DefaultHeader)
	if tok == "" {
		t.Fatal("no token")
	}
	post := func(auth string) int {
		req, _ := http.NewRequest(http.MethodPost, a.url+gate.RevokePath+"?room=drop", nil)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("Bearer " + tok[:len(tok)-4] + "AAAA"); got != 401 {
		t.Fatalf("a forged token: %d", got)
	}
	// (Asked with a visitor, the room would now have a waiter ahead of the
	// next one: read the counts instead.)
	if st, err := a.store.Stats(context.Background(), "drop", time.Now()); err != nil || st.Active != 1 || st.Slots != 0 {
		t.Fatalf("before the revoke: %+v, %v; want the one slot taken", st, err)
	}
	if got := post("Bearer " + tok); got != 204 {
		t.Fatalf("revoke: %d", got)
	}
	if got := a.ask(t, gate.AuthPath, caddyHeaders("/drop/z")); got.status != 200 {
		t.Fatalf("after the revoke: %d, want the freed slot taken", got.status)
	}
}
