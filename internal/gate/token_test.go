package gate_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// tokenStack is a gate with admission tokens in front of an origin that
// records the token header of each request.
type tokenStack struct {
	url  string
	mu   sync.Mutex
	seen []string // the X-Usher-Admission header the origin got, per request
}

func newTokenStack(t *testing.T, rooms ...*usher.Room) *tokenStack {
	t.Helper()
	s := &tokenStack{}
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get(token.DefaultHeader))
		s.mu.Unlock()
		io.WriteString(w, "inside")
	}))
	t.Cleanup(origin.Close)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys := []usher.Key{mustKey(t, "k1")}
	ring, _ := ticket.NewRing(keys)
	signer, err := token.New(keys, token.Options{Issuer: "https://shop.example"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rooms {
		r.Origin = origin.URL
	}
	g, err := gate.New(gate.Options{Rooms: rooms, Decider: admission.New(st, admission.Options{}), Sealer: ring,
		Tokens: &gate.Tokens{Signer: signer}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *tokenStack) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return ""
	}
	return s.seen[len(s.seen)-1]
}

// TestAdmissionTokenReachesTheOrigin: an admitted request carries a token
// that an independent JWT library verifies with the published keys; a
// token a client sends itself never reaches the origin; the verify
// endpoint agrees.
func TestAdmissionTokenReachesTheOrigin(t *testing.T) {
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	room.Rules = []usher.Rule{{Description: "static", Expression: `path.startsWith("/static/")`, Action: "bypass_waiting_room", Enabled: true}}
	s := newTokenStack(t, room)
	forged := "eyJhbGciOiJub25lIn0.eyJhdWQiOiJkcm9wIn0."
	req, _ := http.NewRequest(http.MethodGet, s.url+"/buy", nil)
	req.Header.Set(token.DefaultHeader, forged)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	tok := s.last()
	if tok == "" || tok == forged {
		t.Fatalf("the origin got token %q, want one usher signed", tok)
	}
	// The keys, as an origin in another language reads them.
	resp, err = http.Get(s.url + "/__usher/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") == "" {
		t.Fatalf("jwks: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	var set struct {
		Keys []struct{ Kid, X string } `json:"keys"`
	}
	if err := json.Unmarshal(raw, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("jwks %s: %v", raw, err)
	}
	pub, _ := base64.RawURLEncoding.DecodeString(set.Keys[0].X)
	claims := jwt.MapClaims{}
	_, err = jwt.ParseWithClaims(tok, claims, func(t *jwt.Token) (any, error) {
		if t.Header["kid"] != set.Keys[0].Kid {
			return nil, fmt.Errorf("kid %v", t.Header["kid"])
		}
		return ed25519.PublicKey(pub), nil
	}, jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithAudience("drop"), jwt.WithIssuer("https://shop.example"), jwt.WithExpirationRequired())
	if err != nil {
		t.Fatalf("golang-jwt: %v", err)
	}
	exp, _ := claims.GetExpirationTime()
	if exp == nil || exp.After(time.Now().Add(6*time.Minute)) || claims["sub"] == "" {
		t.Fatalf("claims %v", claims)
	}
	// The verify endpoint, for origins that cannot verify themselves.
	resp, err = http.PostForm(s.url+"/__usher/verify", url.Values{"room": {"drop"}, "token": {tok}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("verify of a good token: %d", resp.StatusCode)
	}
	resp, _ = http.PostForm(s.url+"/__usher/verify", url.Values{"room": {"drop"}, "token": {forged}})
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("verify of a forged token: %d", resp.StatusCode)
	}
	// A bypassed request carries no token, and not the client's either.
	req, _ = http.NewRequest(http.MethodGet, s.url+"/static/a.css", nil)
	req.Header.Set(token.DefaultHeader, forged)
	resp, _ = http.DefaultClient.Do(req)
	resp.Body.Close()
	if got := s.last(); got != "" {
		t.Fatalf("a bypassed request reached the origin with token %q", got)
	}
}
