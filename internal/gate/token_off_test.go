package gate_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
	"github.com/usherhq/usher/internal/token"
)

// TestNoAdmissionTokenWhenDisabled: with admission tokens off
// (admission_token.enabled: false, no gate.Tokens) an admitted request
// reaches the origin with no token, so none is signed (a new visitor's
// largest cost after its admission), and a token the client sends itself
// does not reach the origin either.
func TestNoAdmissionTokenWhenDisabled(t *testing.T) {
	var seen []string
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get(token.DefaultHeader))
		io.WriteString(w, "inside")
	}))
	t.Cleanup(origin.Close)
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ring, _ := ticket.NewRing([]usher.Key{mustKey(t, "k1")})
	room := fullRoom()
	room.Routes = []usher.Route{{Path: "/"}}
	room.Origin = origin.URL
	g, err := gate.New(gate.Options{Rooms: []*usher.Room{room}, Decider: admission.New(st, admission.Options{}), Sealer: ring})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/buy", nil)
	req.Header.Set(token.DefaultHeader, "eyJhbGciOiJub25lIn0.eyJhdWQiOiJkcm9wIn0.")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "inside" || len(seen) != 1 {
		t.Fatalf("the visitor was not admitted: %d %q", resp.StatusCode, body)
	}
	if seen[0] != "" {
		t.Fatalf("the origin got token %q with admission tokens off", seen[0])
	}
}
