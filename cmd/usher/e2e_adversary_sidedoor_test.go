package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/ticket"
)

// advSideDoorRooms is a room on one named host and path, full with one
// session, in front of the same origin as everything else: the top-level
// origin takes what matches no room, so a request that escapes the room's
// route reaches the room's origin without its decision. A bypass rule lets
// the room's static files through.
const advSideDoorRooms = `  - id: drop
    origin: ORIGIN
    routes:
      - host: shop.example
        path: /drop
    total_active_users: 1
    new_users_per_minute: 100
    session_duration: 10m
    refresh_interval: 2s
    json_response_enabled: true
    rules:
      - description: static files
        expression: path.startsWith("/drop/static/")
`

// advSideDoorNode starts a node with the side-door room and fills it with
// one session; it returns the node and how many requests the origin got
// (the filler's one).
func advSideDoorNode(t *testing.T) *advNode {
	t.Helper()
	n := newAdvNode(t, "", "origin: ORIGIN\n", advSideDoorRooms, "drop")
	if st, err := rawRequest(n.addr, "GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\nX-Adv-Client: filler\r\n\r\n"); err != nil || st != http.StatusOK {
		t.Fatalf("the first visitor: %d %v, want admitted", st, err)
	}
	if got := len(n.origin.hits(nil)); got != 1 {
		t.Fatalf("the origin got %d requests from the first visitor, want 1", got)
	}
	return n
}

// TestE2EAdversarySideDoorHosts plays issue 8's defect 6 against the real
// binary with the default unknown_hosts (reject, since the room names a
// host) and a top-level origin shared with the room: while the room on
// shop.example/drop is full, raw TCP requests name another Host, none
// (HTTP/1.0), an absolute URI for another host, another method, or write
// the room's path another way. Asserted: none of them reaches the origin
// (0 side-door requests); the room's host on a path no room covers still
// does (the control).
func TestE2EAdversarySideDoorHosts(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := advSideDoorNode(t)
	attacks := []string{
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",                        // the room itself: waits
		"GET /drop/buy HTTP/1.1\r\nHost: SHOP.Example.\r\n\r\n",                       // the room, written otherwise
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example:8080\r\n\r\n",                   // with a port
		"GET /drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",                                   // another host
		"GET /drop/buy HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",                           // the address
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example.evil\r\n\r\n",                   // a longer name
		"GET /drop/buy HTTP/1.1\r\nHost: \r\n\r\n",                                    // an empty Host
		"GET /drop/buy HTTP/1.0\r\n\r\n",                                              // HTTP/1.0 without Host
		"GET http://other/drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",            // absolute form
		"GET http://other:80/drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",         // absolute, with a port
		"GET https://other/drop/buy HTTP/1.1\r\nHost: other\r\n\r\n",                  // absolute, https
		"GET http://other/drop/buy HTTP/1.0\r\n\r\n",                                  // absolute, HTTP/1.0
		"GET //x/drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",                                // a path like a host
		"GET /drop/buy HTTP/1.1\r\nHost: x\r\nX-Forwarded-Host: shop.example\r\n\r\n", // untrusted header
		"POST /drop/buy HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi",           // other methods
		"PUT /drop/buy HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
		"DELETE /drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",
		"HEAD /drop/buy HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n",
		"OPTIONS /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"CONNECT shop.example:443 HTTP/1.1\r\nHost: shop.example:443\r\n\r\n",
		"PATCH /drop/buy HTTP/1.1\r\nHost: shop.example\r\nContent-Length: 0\r\n\r\n",
		"get /drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n", // a method in lower case
		"GET /DROP/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n", // paths written otherwise
		"GET /drop%2fbuy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /%64rop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET //drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /x/../drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /drop/./buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /drop;x/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /drop%3bx/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /x%2f..%2fdrop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /x\\..\\drop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /x%5c..%5cdrop/buy HTTP/1.1\r\nHost: shop.example\r\n\r\n",
		"GET /drop/buy HTTP/1.1\r\nHost: shop.example\r\nX-Forwarded-Prefix: /other\r\n\r\n",
	}
	statuses := map[int]int{}
	for _, req := range attacks {
		st, err := rawRequest(n.addr, req)
		if err != nil {
			t.Logf("%q: no answer (%v)", firstLine(req), err)
		}
		statuses[st]++
		if got := len(n.origin.hits(nil)); got != 1 {
			t.Fatalf("%q (status %d) reached the origin past the full room: %+v", firstLine(req), st, n.origin.hits(nil))
		}
	}
	// The control: the room's host on a path that no room covers goes to
	// the origin, as the operator asked.
	if st, err := rawRequest(n.addr, "GET /about HTTP/1.1\r\nHost: shop.example\r\n\r\n"); err != nil || st != http.StatusOK || len(n.origin.hits(nil)) != 2 {
		t.Fatalf("/about on the room's host: %d %v; the origin got %d requests, want 2", st, err, len(n.origin.hits(nil)))
	}
	t.Logf("side doors: %d requests by other hosts, no host, absolute URIs, other methods and path spellings; answers by status %v; side-door requests reaching the origin: 0", len(attacks), statuses)
}

// TestE2EAdversaryBypassRulePathReadings plays issue 8's defect 7: a
// bypass rule path.startsWith("/drop/static/") and paths that start with
// /drop/static/ in one reading and name /drop/buy in another (Java's
// path parameters, encoded dots, slashes and backslashes, letter case),
// sent raw while the room is full. Asserted: none reaches the origin; a
// real static file does (the control).
func TestE2EAdversaryBypassRulePathReadings(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := advSideDoorNode(t)
	if st, err := rawRequest(n.addr, "GET /drop/static/app.css HTTP/1.1\r\nHost: shop.example\r\n\r\n"); err != nil || st != http.StatusOK || len(n.origin.hits(nil)) != 2 {
		t.Fatalf("a static file: %d %v, want bypassed to the origin", st, err)
	}
	paths := []string{
		"/drop/static/..;/buy",
		"/drop/static/..%3B/buy",
		"/drop/static/..%3b/buy",
		"/drop/static/%2e%2e;/buy",
		"/drop/static/%2E%2E%3B/buy",
		"/drop/static/.;/../buy",
		"/drop/static/x;/../../buy",
		"/drop/static;/../buy",
		"/Drop/Static/..;/BUY",
		"/drop/static/..%2fbuy",
		"/drop/static/..%2Fbuy",
		"/drop/static/%2e%2e%2fbuy",
		"/drop/static/..%5cbuy",
		"/drop/static/..\\buy",
		"/drop/static/%2e%2e/buy",
		"/drop/static/..;x=1/buy",
		"/drop/static/..;/..;/drop/buy",
	}
	statuses := map[int]int{}
	for _, p := range paths {
		st, err := rawRequest(n.addr, "GET "+p+" HTTP/1.1\r\nHost: shop.example\r\n\r\n")
		if err != nil {
			t.Logf("%s: no answer (%v)", p, err)
		}
		statuses[st]++
		if hits := n.origin.hits(nil); len(hits) != 2 {
			t.Fatalf("%s (status %d) was let past the full room by the bypass rule: the origin got %q", p, st, hits[len(hits)-1].URI)
		}
	}
	t.Logf("bypass rule readings: %d paths that leave /drop/static/ in some reading; answers by status %v; reaching the origin past the full room: 0", len(paths), statuses)
}

func firstLine(req string) string {
	line, _, _ := strings.Cut(req, "\r\n")
	return line
}

// TestE2EAdversaryForgedTickets plays Queue-it's "skipping the room" with
// tickets the attacker makes itself, against a full room of one: garbage,
// a waiting ticket with one character changed or cut in half, an admitted
// ticket of another room (under this room's cookie name, and under its
// own), an admitted ticket sealed with a key of the ring's id but another
// secret, and with an unknown key id, and an admitted ticket of this room
// with one character changed. Asserted: each opens as a new visitor (a
// waiting answer); none reaches the origin.
func TestE2EAdversaryForgedTickets(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", `  - id: sale
    origin: ORIGIN
    routes:
      - path: /sale
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    refresh_interval: 2s
    json_response_enabled: true
  - id: other
    origin: ORIGIN
    routes:
      - path: /other
    cookie_suffix: other
    total_active_users: 100
    new_users_per_minute: 600
    session_duration: 1h
    json_response_enabled: true
`, "sale")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	sale := n.url("/sale/buy")
	filler := newAdvClient("filler", rt)
	admitted := filler.mustAdmit(t, sale, "first").set
	waiting := newAdvClient("waiter", rt).mustWait(t, sale, "in the full room").set
	other := newAdvClient("other", rt).mustAdmit(t, n.url("/other/x"), "in room other").set
	reached := len(n.origin.hits(nil))

	forge := func(id string, secret []byte) string {
		ring, err := ticket.NewRing([]usher.Key{{ID: id, Secret: secret}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		var vid [8]byte
		copy(vid[:], "forged!!")
		v, err := ring.Seal(&usher.Ticket{VisitorID: vid, State: usher.Admitted, ArrivedAt: now, AdmittedAt: now, CountedAt: now,
			Until: now.Add(time.Hour), Cell: now.Add(time.Hour).Unix()}, "sale", advCookie)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	flip := func(s string) string {
		b := []byte(s)
		i := len(b) / 2
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		return string(b)
	}
	other32 := make([]byte, 32)
	other32[0] = 1
	attacks := []struct {
		name, cookie, value string
	}{
		{"garbage", advCookie, "AQJrMQRkcm9wZ2FyYmFnZWdhcmJhZ2VnYXJiYWdl"},
		{"empty", advCookie, ""},
		{"a waiting ticket with one character changed", advCookie, flip(waiting.Value)},
		{"a waiting ticket cut in half", advCookie, waiting.Value[:len(waiting.Value)/2]},
		{"an admitted ticket with one character changed", advCookie, flip(admitted.Value)},
		{"another room's admitted ticket under this room's name", advCookie, other.Value},
		{"another room's admitted ticket under its own name", other.Name, other.Value},
		{"an admitted ticket sealed with the ring's key id and another secret", advCookie, forge(n.key.ID, other32)},
		{"an admitted ticket sealed with an unknown key", advCookie, forge("evil", other32)},
	}
	for _, at := range attacks {
		c := newAdvClient("forger", rt)
		c.follow = false
		c.setTicket(&http.Cookie{Name: at.cookie, Value: at.value})
		a := c.must(t, sale)
		if a.origin || !a.waiting {
			t.Errorf("%s: %d origin=%v %q, want a waiting answer (a new visitor)", at.name, a.status, a.origin, a.body)
		}
	}
	if got := len(n.origin.hits(nil)) - reached; got != 0 {
		t.Errorf("%d forged tickets reached the origin past the full room", got)
	}
	t.Logf("forged tickets: %d kinds presented to a full room; each opened as a new visitor; reaching the origin: %d", len(attacks), len(n.origin.hits(nil))-reached)
}
