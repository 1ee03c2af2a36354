package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nginxCacheRoom is TestE2ENginxAuthCache's usher: a full room of one
// with hour-long sessions (renewed at most every 10 s, so that usher lets
// nginx keep an admitted visitor's answer), tickets bound to the client's
// exact address and browser; a room on another host where everyone
// waits; a room with space; an admin listener for the metrics.
const nginxCacheRoom = `listen: %%s
admin:
  listen: %s
  token: e2e-cache
trusted_proxies: [127.0.0.1/8]
store:
  embedded:
    path: %%s
rooms:
  - id: shop
    origin: %%[3]s
    routes:
      - path: /
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    refresh_interval: 2s
    ticket_binding:
      client_prefix: true
      ipv4_prefix: 32
      user_agent: true
  - id: vip
    origin: %%[3]s
    cookie_suffix: vip
    routes:
      - host: vip.test
        path: /
    total_active_users: 10
    new_users_per_minute: 600
    queue_all: true
    refresh_interval: 2s
  - id: free
    origin: %%[3]s
    cookie_suffix: free
    routes:
      - path: /free
    total_active_users: 100
    new_users_per_minute: 600
    session_duration: 1h
`

// cacheAnswer is what a raw request through the proxy got.
type cacheAnswer struct {
	status     int
	fromOrigin bool
	ticket     string // the value of the first __usher_wr* cookie set, if any
}

// cacheGet sends one request line as written (no escaping of the target),
// from the loopback address from, with the Host, User-Agent and Cookie
// given, on a connection of its own.
func cacheGet(t *testing.T, proxy, from, target, host, ua, cookie string) cacheAnswer {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	req := fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: %s\r\nConnection: close\r\n", target, host, ua)
	if cookie != "" {
		req += "Cookie: " + cookie + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	a := cacheAnswer{status: resp.StatusCode, fromOrigin: resp.Header.Get("X-From-Origin") == "1"}
	for _, ck := range resp.Cookies() {
		if strings.HasPrefix(ck.Name, "__usher_wr") && ck.Value != "" {
			a.ticket = ck.Name + "=" + ck.Value
			break
		}
	}
	return a
}

// admitAnswers returns usher_requests_total for room shop, outcome admit:
// how many questions usher answered "through" for an admitted visitor.
func admitAnswers(t *testing.T, adm string) int {
	t.Helper()
	code, body := adminGet(t, adm, "e2e-cache", "/metrics")
	if code != 200 {
		t.Fatalf("metrics: %d", code)
	}
	for line := range strings.SplitSeq(body, "\n") {
		if strings.HasPrefix(line, "usher_requests_total{") && strings.Contains(line, `outcome="admit"`) && strings.Contains(line, `room="shop"`) {
			f, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(f)
		}
	}
	return 0
}

// TestE2ENginxAuthCache runs docs/integrations/nginx.conf with its cache
// of usher's answers and plays the clients a cache keyed by the question
// invites. Asserted, through real nginx and the real binary:
//
//   - an admitted visitor's 20 quick requests all reach the origin with
//     usher's token while usher answers at most 2 of them (the rest come
//     from nginx's cache);
//   - the same cookie with one character changed, from another address
//     (the ticket is bound to it), or on another host (another room) is
//     asked about and waits, while the owner's answer is in the cache;
//   - a question shaped to shift its values into the owner's cache key
//     (a URI and a User-Agent holding the key's separators and the other
//     address) waits: the key's values are apart by newlines, which no
//     request can hold (with "|" between them, the copy walked in);
//   - two new visitors from one address, without cookies (one cache key),
//     each get a ticket of their own: answers that set a cookie are never
//     kept;
//   - a revoked session stops within the cache time usher allows (5 s,
//     gate.AuthCacheMax), plus a second; its place goes to a newcomer at
//     once (for those seconds the room holds one more than its limit:
//     the documented cost of the cache).
func TestE2ENginxAuthCache(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: runs for about 10 s")
	}
	// Not parallel: the revoked session's bound (5 s and a second) is
	// timed on the wall clock.
	adm := freeAddr(t)
	rig := newProxyRigWith(t, fmt.Sprintf(nginxCacheRoom, adm))
	runNginxRecipe(t, rig)
	proxy := rig.listenAddr()
	const ua = "Browser/1"

	first := cacheGet(t, proxy, "127.0.0.1", "/", "shop.test", ua, "")
	if !first.fromOrigin || first.ticket == "" {
		t.Fatalf("first visitor: %+v, want admitted with a ticket", first)
	}
	owner := first.ticket
	before := admitAnswers(t, adm)
	for i := range 20 {
		a := cacheGet(t, proxy, "127.0.0.1", "/", "shop.test", ua, owner)
		if !a.fromOrigin {
			t.Fatalf("owner's request %d: %+v, want the origin", i, a)
		}
		if a.ticket != "" {
			owner = a.ticket
		}
		if h, ok := rig.origin.last("/"); !ok || h.token == "" {
			t.Fatalf("owner's request %d reached the origin without usher's token", i)
		}
	}
	if asked := admitAnswers(t, adm) - before; asked > 2 {
		t.Errorf("usher answered %d of the owner's 20 requests; want at most 2 (the rest from nginx's cache)", asked)
	}

	// Forged, copied, another host, a shifted key: each waits while the
	// owner's answer is kept.
	_ = cacheGet(t, proxy, "127.0.0.1", "/", "shop.test", ua, owner) // the owner's answer, fresh in the cache
	name, val, _ := strings.Cut(owner, "=")
	flip := byte('A')
	if val[len(val)-2] == 'A' {
		flip = 'B'
	}
	forged := name + "=" + val[:len(val)-2] + string(flip) + val[len(val)-1:]
	shifted := "/a|127.0.0.2||x"
	if a := cacheGet(t, proxy, "127.0.0.1", shifted, "shop.test", ua, owner); !a.fromOrigin {
		t.Fatalf("the owner's request for %s: %+v, want the origin", shifted, a)
	}
	for _, tc := range []struct{ what, from, target, host, ua, cookie string }{
		{"a forged cookie (one character changed)", "127.0.0.1", "/", "shop.test", ua, forged},
		{"the owner's cookie from another address", "127.0.0.2", "/", "shop.test", ua, owner},
		{"the owner's cookie in another browser", "127.0.0.1", "/", "shop.test", "Browser/2", owner},
		{"the owner's cookie on another host (a room where all wait)", "127.0.0.1", "/", "vip.test", ua, owner},
		{"a question shifted into the owner's key", "127.0.0.2", "/a", "shop.test", "x|127.0.0.1||" + ua, owner},
	} {
		if a := cacheGet(t, proxy, tc.from, tc.target, tc.host, tc.ua, tc.cookie); a.fromOrigin {
			t.Errorf("%s: reached the origin (%+v)", tc.what, a)
		}
	}

	// New visitors behind one address share a cache key: each must get a
	// ticket of its own.
	w1 := cacheGet(t, proxy, "127.0.0.3", "/free", "shop.test", ua, "")
	w2 := cacheGet(t, proxy, "127.0.0.3", "/free", "shop.test", ua, "")
	if !w1.fromOrigin || !w2.fromOrigin || w1.ticket == "" || w2.ticket == "" || w1.ticket == w2.ticket {
		t.Fatalf("two new visitors from one address: %+v, %+v; want two tickets of their own", w1, w2)
	}

	// Revoked: stopped within the cache time.
	_ = cacheGet(t, proxy, "127.0.0.1", "/", "shop.test", ua, owner)
	hit, ok := rig.origin.last("/")
	if !ok || hit.token == "" {
		t.Fatal("no token for the owner at the origin")
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+rig.usherAddr+"/__usher/revoke?room=shop", nil)
	req.Header.Set("Authorization", "Bearer "+hit.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	revoked := time.Now()
	// The place it held goes to a newcomer at once, so that the owner,
	// once usher is asked again, is a new visitor who waits.
	if a := cacheGet(t, proxy, "127.0.0.4", "/", "shop.test", ua, ""); !a.fromOrigin {
		t.Fatalf("a newcomer after the revoke: %+v, want the freed place", a)
	}
	for {
		a := cacheGet(t, proxy, "127.0.0.1", "/", "shop.test", ua, owner)
		if !a.fromOrigin {
			t.Logf("revoked session stopped after %v", time.Since(revoked).Round(time.Millisecond))
			break
		}
		if a.ticket != "" {
			owner = a.ticket
		}
		if time.Since(revoked) > 6*time.Second {
			t.Fatalf("a revoked session still goes through %v after the revoke (cache time 5 s)", time.Since(revoked))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
