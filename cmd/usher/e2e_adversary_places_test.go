package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/guard"
	"github.com/usherhq/usher/internal/notify"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/ticket"
)

// The places suite plays the clients that try to get places in line
// without paying for them (a proof of work solved once, spent many times;
// a burst faster than the room's status) and the origins or clients that
// try to count one ended session many times (revokes and stale tickets).

// advPoWRoom is a room on /id with a proof of work at a difficulty a test
// solves at once, always asked or only while the room queues.
func advPoWRoom(id string, total int, always bool) string {
	return fmt.Sprintf(`  - id: %s
    origin: ORIGIN
    routes:
      - path: /%s
    total_active_users: %d
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: 2s
    json_response_enabled: true
    proof_of_work:
      difficulty: 4
      always: %v
`, id, id, total, always)
}

// powAnswer is what one request of a proof-of-work test got.
type powAnswer struct {
	advAnswer
	challenge guard.ChallengeJSON // empty unless the answer is a challenge
}

// place reports whether the answer gave the client a place: the origin's
// page, or a waiting answer with a ticket.
func (a powAnswer) place() bool { return a.origin || (a.waiting && a.set != nil) }

// powGet sends a GET from the client at xff with ticket ck (none when nil)
// and the solution sol in guard.Header (none when empty).
func powGet(rt http.RoundTripper, url, xff string, ck *http.Cookie, sol string) (powAnswer, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return powAnswer{}, err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("X-Forwarded-For", xff)
	if ck != nil {
		req.AddCookie(&http.Cookie{Name: ck.Name, Value: ck.Value})
	}
	if sol != "" {
		req.Header.Set(guard.Header, sol)
	}
	hc := &http.Client{Transport: rt, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return powAnswer{}, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return powAnswer{}, err
	}
	a := powAnswer{advAnswer: readAdvAnswer(advAnswer{}, resp, body)}
	var ch guard.ChallengeBody
	if json.Unmarshal(body, &ch) == nil {
		a.challenge = ch.Challenge
	}
	return a, nil
}

// solveAndEnter asks url for a challenge from xff, solves it, and comes
// back with the solution; it returns the answer that let it in.
func solveAndEnter(t *testing.T, rt http.RoundTripper, url, xff string) powAnswer {
	t.Helper()
	a, err := powGet(rt, url, xff, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.challenge.Challenge == "" {
		t.Fatalf("a new visitor: want a challenge, got %d %q", a.status, a.body)
	}
	n, err := guard.Solve(t.Context(), a.challenge.Challenge, a.challenge.Difficulty)
	if err != nil {
		t.Fatal(err)
	}
	a, err = powGet(rt, url, xff, nil, a.challenge.Challenge+"."+n)
	if err != nil {
		t.Fatal(err)
	}
	if !a.origin || a.set == nil {
		t.Fatalf("with the solution: want the origin and a ticket, got %d %q", a.status, a.body)
	}
	return a
}

// TestE2EAdversaryPoWOldTicket plays a client that solves one challenge,
// lets its session end, then sends the ended ticket from 40 addresses
// (attack 2 of issue 21): each request would make a new visitor, and each
// must pay for it. Asserted: 40 challenges, no place. Before the fix
// every such request was a new visitor without a challenge (40 places).
func TestE2EAdversaryPoWOldTicket(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, advPoWRoom("pow", 100, true), "pow")
	url := n.url("/pow/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	in := solveAndEnter(t, rt, url, "192.0.2.1")
	tk, err := n.open("pow", in.set)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(tk.Until) + 500*time.Millisecond)

	places, challenged := 0, 0
	for i := range 40 {
		a, err := powGet(rt, url, fmt.Sprintf("203.0.113.%d", i+1), in.set, "")
		if err != nil {
			t.Fatal(err)
		}
		if a.place() {
			places++
		}
		if a.challenge.Challenge != "" {
			challenged++
		}
	}
	t.Logf("one solution, the ended ticket sent from 40 addresses: %d places, %d challenges", places, challenged)
	if places != 0 || challenged != 40 {
		t.Errorf("the ended ticket from 40 addresses got %d places and %d challenges, want 0 and 40", places, challenged)
	}
}

// TestE2EAdversaryPoWBurst plays a burst of 150 cookie-less requests, at
// once, from 150 addresses, on a room of one place whose proof of work is
// asked only while it queues (attack 3 of issue 21): the first takes the
// free place, and every other would wait, so each must be challenged,
// whatever a status read a moment before said. Asserted: at most one place
// without a solution. Before the fix 149 of 150 took a place and none was
// challenged.
func TestE2EAdversaryPoWBurst(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, advPoWRoom("burst", 1, false), "burst")
	url := n.url("/burst/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	const burst = 150
	var (
		wg                    sync.WaitGroup
		mu                    sync.Mutex
		places, challenged, e int
	)
	start := make(chan struct{})
	for i := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a, err := powGet(rt, url, fmt.Sprintf("198.51.%d.%d", 100+i/200, i%200+1), nil, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				e++
			case a.place():
				places++
			case a.challenge.Challenge != "":
				challenged++
			}
		}()
	}
	close(start)
	wg.Wait()
	t.Logf("a burst of %d cookie-less requests on a room of one place: %d places, %d challenged, %d errors", burst, places, challenged, e)
	if e != 0 || places > 1 || challenged < burst-1 {
		t.Errorf("a burst of %d: %d places, %d challenged, %d errors; want at most 1 place, the rest challenged", burst, places, challenged, e)
	}
	st, err := n.status("burst")
	if err != nil {
		t.Fatal(err)
	}
	if st.Waiting != 0 {
		t.Errorf("after the burst the room counts %d waiting, want none (a challenged visitor holds no place)", st.Waiting)
	}
}

// advHookRoom is a room on /id that sends every visitor event of every room to the receiver at
// url.
func advHookRoom(id, url string) string {
	return fmt.Sprintf(`  - id: %s
    origin: ORIGIN
    routes:
      - path: /%s
    total_active_users: 100
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    json_response_enabled: true
    webhooks:
      - name: all
        url: %s
        secret: %s
        events: [visitor.*]
        visitor_events: 1
`, id, id, url, webhookE2ESecret)
}

// revokeWith posts the admission token tok to the node's revoke path for
// room, and returns the status.
func revokeWith(rt http.RoundTripper, n *advNode, room, tok string) (int, error) {
	req, err := http.NewRequest(http.MethodPost, n.url("/__usher/revoke?room="+room), nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := (&http.Client{Transport: rt, Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestE2EAdversaryRevokeOnce plays an origin (or whoever holds an
// admission token) that revokes one session 300 times, and a client that
// sends ended tickets 200 times (attack 8 of issue 21), on one node.
// Asserted: the first revoke ends the session, the other 299 change
// nothing: usher_revoked_sessions_total counts one, one visitor.revoked
// webhook; 100 requests with another visitor's ended ticket bring one
// visitor.session_ended, and 100 with the revoked ticket none. Before the
// fix: 300 revokes counted, 300 webhooks; 200 session_ended events.
func TestE2EAdversaryRevokeOnce(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rc := newReceiver(t, 0)
	key, err := ticket.GenerateKey("adv1")
	if err != nil {
		t.Fatal(err)
	}
	var origin tokenOrigin
	n := startAdvNode(t, key, origin.start(t), "", advTrusted, advHookRoom("once", rc.srv.URL), "once")
	checkRevokeOnce(t, []*advNode{n}, &origin, rc)
}

// TestE2EAdversaryRevokeOnceRedis is TestE2EAdversaryRevokeOnce on two
// nodes sharing a real redis-server: the revokes and the stale requests
// alternate between them, and each end is still told once in all.
func TestE2EAdversaryRevokeOnceRedis(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	rc := newReceiver(t, 0)
	key, err := ticket.GenerateKey("adv1")
	if err != nil {
		t.Fatal(err)
	}
	var origin tokenOrigin
	o := origin.start(t)
	store := advRedis(rd.Addr(), "closed")
	a := startAdvNode(t, key, o, store, advTrusted, advHookRoom("once", rc.srv.URL), "once")
	b := startAdvNode(t, key, o, store, advTrusted, advHookRoom("once", rc.srv.URL), "once")
	checkRevokeOnce(t, []*advNode{a, b}, &origin, rc)
}

// checkRevokeOnce runs the revoke-once play on nodes (requests go to each
// in turn).
func checkRevokeOnce(t *testing.T, nodes []*advNode, origin *tokenOrigin, rc *receiver) {
	t.Helper()
	n := nodes[0]
	url := n.url("/once/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()

	// The revoked visitor: its token, from the origin's view.
	rv := newAdvClient("revoked", rt)
	rv.xff = "192.0.2.1"
	rv.mustAdmit(t, url, "arriving")
	// The ended visitor: its session ends by itself.
	ended := newAdvClient("ended", rt)
	ended.xff = "192.0.2.2"
	ended.mustAdmit(t, url, "arriving")
	tk, err := n.open("once", ended.ticket())
	if err != nil {
		t.Fatal(err)
	}
	tok := origin.token(t, "revoked")
	for i := range 300 {
		code, err := revokeWith(rt, nodes[i%len(nodes)], "once", tok)
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusNoContent && code != http.StatusOK {
			t.Fatalf("revoke %d: status %d, want 204 or 200", i+1, code)
		}
	}
	time.Sleep(time.Until(tk.Until) + 500*time.Millisecond)
	old := ended.ticket()
	revokedTk := rv.ticket()
	for i := range 200 {
		ck := old
		if i%2 == 1 {
			ck = revokedTk
		}
		if _, err := rv.send(nodes[(i/2)%len(nodes)].url("/once/buy"), ck); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // deliveries in flight
	rc.mu.Lock()
	got := append([]delivery(nil), rc.got...)
	rc.mu.Unlock()
	revokes, ends := len(ofType(got, notify.VisitorRevoked)), len(ofType(got, notify.VisitorSessionEnded))
	counted := 0.0
	for _, nd := range nodes {
		counted += revokedCount(t, nd)
	}
	t.Logf("%d node(s), 300 revokes of one session: %v counted, %d revoked webhooks; 200 requests with ended tickets: %d session_ended webhooks",
		len(nodes), counted, revokes, ends)
	if counted != 1 || revokes != 1 {
		t.Errorf("300 revokes of one session: %v counted, %d webhooks; want 1 and 1", counted, revokes)
	}
	if ends != 1 {
		t.Errorf("100 requests with an ended ticket and 100 with a revoked one: %d session_ended events, want 1", ends)
	}
}

// TestE2EAdversaryPoWSpentRedis: a solution spent on one node is spent
// on the other node sharing the redis-server, and racing it to both at
// once earns one place.
func TestE2EAdversaryPoWSpentRedis(t *testing.T) {
	advSkip(t)
	t.Parallel()
	rd := redistest.StartServer(t)
	key, err := ticket.GenerateKey("adv1")
	if err != nil {
		t.Fatal(err)
	}
	o := newAdvOrigin(t)
	store := advRedis(rd.Addr(), "closed")
	a := startAdvNode(t, key, o, store, advTrusted, advPoWRoom("pow", 100, true), "pow")
	b := startAdvNode(t, key, o, store, advTrusted, advPoWRoom("pow", 100, true), "pow")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	for round := range 5 {
		ch, err := powGet(rt, a.url("/pow/buy"), "192.0.2.9", nil, "")
		if err != nil || ch.challenge.Challenge == "" {
			t.Fatalf("round %d: want a challenge, got %v %v", round, ch.status, err)
		}
		n, err := guard.Solve(t.Context(), ch.challenge.Challenge, ch.challenge.Difficulty)
		if err != nil {
			t.Fatal(err)
		}
		sol := ch.challenge.Challenge + "." + n
		var wg sync.WaitGroup
		var places atomic.Int64
		for i := range 10 {
			nd := []*advNode{a, b}[i%2]
			wg.Go(func() {
				if ans, err := powGet(rt, nd.url("/pow/buy"), "192.0.2.9", nil, sol); err == nil && ans.place() {
					places.Add(1)
				}
			})
		}
		wg.Wait()
		if places.Load() != 1 {
			t.Fatalf("round %d: one solution sent 10 times to two nodes at once earned %d places, want 1", round, places.Load())
		}
	}
}

// revokedCount returns the node's usher_revoked_sessions_total, 0 while
// the node has revoked nothing (the series is not there yet).
func revokedCount(t *testing.T, n *advNode) float64 {
	t.Helper()
	body, err := n.adminGet("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(body, "\nusher_revoked_sessions_total") {
		return 0
	}
	return n.metric(t, "usher_revoked_sessions_total")
}

// tokenOrigin is an origin that keeps the last admission token each
// client (advClientHeader) brought.
type tokenOrigin struct {
	mu     sync.Mutex
	tokens map[string]string
}

// start serves the origin and returns it as an advOrigin for
// startAdvNode.
func (o *tokenOrigin) start(t *testing.T) *advOrigin {
	t.Helper()
	o.tokens = map[string]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tok := r.Header.Get(tokenHeader); tok != "" {
			o.mu.Lock()
			o.tokens[r.Header.Get(advClientHeader)] = tok
			o.mu.Unlock()
		}
		w.Header().Set(advOriginHeader, "1")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "inside\n")
	}))
	t.Cleanup(srv.Close)
	return &advOrigin{URL: srv.URL}
}

// token returns the last admission token client brought.
func (o *tokenOrigin) token(t *testing.T, client string) string {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	tok := o.tokens[client]
	if tok == "" {
		t.Fatalf("the origin got no admission token from %s", client)
	}
	return tok
}
