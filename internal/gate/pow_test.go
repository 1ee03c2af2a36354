package gate_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/store/local"
)

// powGate is a hostile gate whose rooms may ask for proof of work, spent in
// a real store.
func powGate(t *testing.T, rooms ...*usher.Room) *hostileGate {
	t.Helper()
	pow, err := guard.NewPoW([]usher.Key{mustKey(t, "k1")}, guard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spent, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { spent.Close() })
	return newHostileGate(t, func(o *gate.Options) { o.PoW, o.Spent = pow, spent }, rooms...)
}

func powRoom(always bool) *usher.Room {
	r := fullRoom()
	r.Routes = []usher.Route{{Path: "/"}}
	r.JSONResponseEnabled = true
	r.QueueingStatusCode = 429
	r.ProofOfWork = usher.ProofOfWork{Difficulty: 8, Always: always}
	return r
}

type powAnswer struct {
	status    int
	origin    bool
	challenge *guard.ChallengeJSON
	waiting   bool
	cookies   []*http.Cookie
}

func (h *hostileGate) ask(t *testing.T, header string, cookies ...*http.Cookie) powAnswer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.url+"/buy", nil)
	req.Header.Set("Accept", "application/json")
	if header != "" {
		req.Header.Set(guard.Header, header)
	}
	for _, c := range cookies {
		req.AddCookie(c)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	a := powAnswer{status: resp.StatusCode, origin: resp.Header.Get("X-Origin") == "1", cookies: resp.Cookies()}
	var doc struct {
		C *guard.ChallengeJSON `json:"usherChallenge"`
		W *json.RawMessage     `json:"usherWaitingRoom"`
	}
	if json.Unmarshal(body, &doc) == nil {
		a.challenge, a.waiting = doc.C, doc.W != nil
	}
	return a
}

func solve(t *testing.T, c *guard.ChallengeJSON) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n, err := guard.Solve(ctx, c.Challenge, c.Difficulty)
	if err != nil {
		t.Fatal(err)
	}
	return c.Challenge + "." + n
}

// TestProofOfWorkBeforeATicket: while the room queues, a visitor without a
// ticket gets a challenge, and a ticket only for a fresh solution; a
// solution is good once.
func TestProofOfWorkBeforeATicket(t *testing.T) {
	h := powGate(t, powRoom(false))
	if a := h.ask(t, ""); !a.origin {
		t.Fatalf("into an empty room: %+v, want admitted at once (no challenge while nobody queues)", a)
	}
	time.Sleep(gate.StatusTTL) // the room's status shows it full now
	a := h.ask(t, "")
	if a.challenge == nil || a.status != 429 || a.challenge.Difficulty != 8 || a.challenge.Header != guard.Header {
		t.Fatalf("into a full room without a solution: %+v, want a challenge with the room's status", a)
	}
	for _, c := range a.cookies {
		if strings.HasPrefix(c.Name, "__usher_wr") {
			t.Fatal("a challenged visitor got a ticket")
		}
	}
	sol := solve(t, a.challenge)
	if b := h.ask(t, sol); !b.waiting {
		t.Fatalf("with a solution: %+v, want a place in line", b)
	}
	for i := range 5 {
		if b := h.ask(t, sol); b.challenge == nil || b.waiting {
			t.Fatalf("the same solution again (%d): %+v, want a new challenge", i, b)
		}
	}
	bad := strings.Replace(sol, ".", ".9", 1)
	if b := h.ask(t, bad); b.challenge == nil {
		t.Fatalf("a wrong counter: %+v, want a challenge", b)
	}
	// The cookie the page sets works as the header does.
	c2 := h.ask(t, "").challenge
	b := h.ask(t, "", &http.Cookie{Name: gate.PoWCookie(powRoom(false)), Value: solve(t, c2)})
	if !b.waiting {
		t.Fatalf("with a solution in the cookie: %+v", b)
	}
	cleared := false
	for _, c := range b.cookies {
		cleared = cleared || (c.Name == gate.PoWCookie(powRoom(false)) && c.MaxAge < 0)
	}
	if !cleared {
		t.Fatal("the spent solution's cookie was not cleared")
	}
	if h.reached.Load() != 1 {
		t.Fatalf("the origin got %d requests, want 1", h.reached.Load())
	}
}

// TestProofOfWorkAlways: with always, even an empty room challenges.
func TestProofOfWorkAlways(t *testing.T) {
	h := powGate(t, powRoom(true))
	a := h.ask(t, "")
	if a.challenge == nil {
		t.Fatalf("always: %+v, want a challenge", a)
	}
	if b := h.ask(t, solve(t, a.challenge)); !b.origin {
		t.Fatalf("with a solution into an empty room: %+v, want admitted", b)
	}
}

// TestProofOfWorkBoundToRoomAndClient: a solution for another room is
// refused.
func TestProofOfWorkBoundToRoomAndClient(t *testing.T) {
	a, b := powRoom(true), powRoom(true)
	b.ID, b.CookieSuffix = "other", "other"
	b.Routes = []usher.Route{{Path: "/other"}}
	h := powGate(t, a, b)
	ch := h.ask(t, "").challenge
	req, _ := http.NewRequest(http.MethodGet, h.url+"/other", nil)
	req.Header.Set("Accept", "application/json")
	req.Header.Set(guard.Header, solve(t, ch))
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Header.Get("X-Origin") == "1" {
		t.Fatal("a solution for one room opened another")
	}
}
