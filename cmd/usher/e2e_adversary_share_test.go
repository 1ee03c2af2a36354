package main

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestE2EAdversaryBoundTicket plays Queue-it's "sharing an admitted cookie"
// against ticket_binding (client prefix and user agent): the owner of an
// admitted cookie (198.51.100.7, Browser/1) in a full room of one hands it
// to clients on another network, another browser, and IPv6. Asserted:
// each copy opens as a new visitor (it waits, and does not reach the
// origin); the owner keeps its session; the room counts one session. A
// copy in the owner's /24 with the same browser still gets in (the binding
// is to the network, as documented).
func TestE2EAdversaryBoundTicket(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", advTrusted, `  - id: sale
    origin: ORIGIN
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 1h
    refresh_interval: 2s
    json_response_enabled: true
    ticket_binding:
      client_prefix: true
      user_agent: true
`, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	owner := newAdvClient("owner", rt)
	owner.xff, owner.ua = "198.51.100.7", "Browser/1"
	owner.mustAdmit(t, url, "first")
	cookie := owner.ticket()

	opened := 0
	for _, cp := range []struct{ xff, ua string }{
		{"203.0.113.9", "Browser/1"},   // another network
		{"198.51.100.7", "Bot/2"},      // another browser
		{"2001:db8::1", "Browser/1"},   // IPv6
		{"198.51.101.7", "Browser/1"},  // the next /24
		{"203.0.113.9", "Browser/1.0"}, // both, nearly
	} {
		c := newAdvClient("copy-"+cp.xff+"-"+cp.ua, rt)
		c.xff, c.ua = cp.xff, cp.ua
		c.follow = false
		c.setTicket(cookie)
		for range 3 {
			a := c.must(t, url)
			if a.origin {
				t.Errorf("the admitted cookie copied to %s %q reached the origin", cp.xff, cp.ua)
				break
			}
			if !a.waiting {
				t.Errorf("copy %s %q: %d %q, want a waiting answer", cp.xff, cp.ua, a.status, a.body)
			}
		}
		opened++
	}
	owner.mustAdmit(t, url, "after its cookie was copied")
	same := newAdvClient("same-24", rt)
	same.xff, same.ua = "198.51.100.99", "Browser/1"
	same.follow = false
	same.setTicket(cookie)
	sameIn := same.must(t, url).origin
	st, err := n.status("sale")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bound tickets: %d copies on another network or browser opened as new visitors (0 reached the origin); the owner kept its session; a copy in the owner's /24 with its browser got in: %v; room: %d active, %d waiting",
		opened, sameIn, st.Active, st.Waiting)
	if !sameIn {
		t.Errorf("a copy in the owner's /24 with the owner's browser did not get in: binding is to the /24")
	}
	if st.Active != 1 {
		t.Errorf("the room counts %d sessions, want the owner's 1", st.Active)
	}
}

// TestE2EAdversarySharedAdmittedCookie measures Queue-it's "sharing an
// admitted cookie" without ticket binding, a documented trade-off: the
// owner of an admitted cookie in a room of two (10 s sessions, renewed by
// browsing) shares it with 5 other clients; all six browse twice a second
// for 15 s, each keeping the tickets it is given (renewals of the one
// session from six places). Asserted (what is guaranteed): the room's
// count of sessions never exceeds its limit, the shared session counts as
// one (a second visitor is admitted, a third waits). Logged: what the
// sharers got.
func TestE2EAdversarySharedAdmittedCookie(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", `  - id: sale
    origin: ORIGIN
    total_active_users: 2
    new_users_per_minute: 600
    session_duration: 10s
    refresh_interval: 2s
    json_response_enabled: true
`, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	owner := newAdvClient("owner", rt)
	owner.mustAdmit(t, url, "first")
	sharers := []*advClient{owner}
	for i := range 5 {
		c := newAdvClient(fmt.Sprintf("sharer%d", i), rt)
		c.setTicket(owner.ticket())
		sharers = append(sharers, c)
	}
	stop := make(chan struct{})
	watch := n.watchActive("sale", stop)
	var wg sync.WaitGroup
	var mu sync.Mutex
	reached := map[string]int{}
	requests := 0
	for _, c := range sharers {
		wg.Go(func() {
			end := time.Now().Add(15 * time.Second)
			for time.Now().Before(end) {
				a, err := c.get(url)
				mu.Lock()
				requests++
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
				} else if a.origin {
					reached[c.name]++
				}
				mu.Unlock()
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	time.Sleep(2 * time.Second)
	second := newAdvClient("second", rt)
	second.mustAdmit(t, url, "in the room of two with one shared session")
	third := newAdvClient("third", rt)
	third.mustWait(t, url, "with two sessions running")
	wg.Wait()
	close(stop)
	peak, _ := watch.result()
	in := 0
	for _, k := range reached {
		if k > 0 {
			in++
		}
	}
	t.Logf("shared admitted cookie (no binding): %d of 6 clients reached the origin on one session (%d of %d requests); the room counted at most %d sessions (limit 2)",
		in, sumInts(reached), requests, peak)
	if peak > 2 {
		t.Errorf("the room counted %d sessions, over its limit of 2", peak)
	}
}

func sumInts(m map[string]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}
