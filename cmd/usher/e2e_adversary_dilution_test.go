package main

import (
	"fmt"
	"testing"
	"time"
)

// TestE2EAdversaryCookielessFloodRandomCapacity plays a client that floods
// a random room with new visits without cookies (50 a second from one
// address): it never gets in, but every new visit counts as a live waiter
// until its first check-in is overdue, and a random draw succeeds with
// probability free slots / live waiters. Three random rooms of three
// (10 s sessions, no renewal, 2 s refresh), each with 30 honest waiters
// who keep their cookies: "open" is flooded, "lim" is flooded but has a
// per-client limit of 5 new visitors a minute, "ctl" is not flooded.
// Asserted: in 60 s the flooded rooms admit at least three quarters of
// the honest waiters the control room admits (the flood wastes no more
// than a quarter of the capacity).
func TestE2EAdversaryCookielessFloodRandomCapacity(t *testing.T) {
	advSkip(t)
	t.Parallel()
	limit := "    client_limit:\n      new_visitors_per_minute: 5\n"
	n := newAdvNode(t, "", advTrusted, advSmallRoom("open", "random")+advSmallRoom("lim", "random")+limit+advSmallRoom("ctl", "random"), "ctl")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	stop := make(chan struct{})
	lines := map[string]*honestLine{}
	watches := map[string]*activeWatch{}
	for _, room := range []string{"open", "lim", "ctl"} {
		url := n.url("/" + room + "/item")
		for i := range 3 {
			c := newAdvClient(fmt.Sprintf("%s-filler%d", room, i), rt)
			c.xff = fmt.Sprintf("192.0.2.%d", i+1)
			c.mustAdmit(t, url, "filling the room")
		}
		watches[room] = n.watchActive(room, stop)
		lines[room] = newHonestLine()
		for i := range 30 {
			c := newAdvClient(fmt.Sprintf("%s-h%02d", room, i), rt)
			c.xff = fmt.Sprintf("198.51.%d.7", i)
			lines[room].join(t, c, url, stop)
		}
	}
	var bots []func() ([]time.Time, int, []error)
	for _, room := range []string{"open", "lim"} {
		for range 5 {
			b := newAdvClient("bot", rt)
			b.xff = "203.0.113.9"
			r, _ := cookieless(b, n.url("/"+room+"/item"), 100*time.Millisecond, stop)
			bots = append(bots, r)
		}
	}
	time.Sleep(60 * time.Second)
	close(stop)
	botIn, sent := 0, 0
	for _, r := range bots {
		in, s, errs := r()
		botIn, sent = botIn+len(in), sent+s
		for _, err := range errs {
			t.Errorf("bot: %v", err)
		}
	}
	for _, l := range lines {
		l.wg.Wait()
	}
	ctl := lines["ctl"].inCount()
	t.Logf("a cookie-less flood of %d new visits in 60 s from one address (50 a second per room) got in %d times; honest waiters admitted: %d flooded, %d flooded with a per-client limit, %d in the control room; mean active sessions while visitors waited (limit 3): %.2f, %.2f, %.2f",
		sent, botIn, lines["open"].inCount(), lines["lim"].inCount(), ctl,
		watches["open"].meanWhileWaiting(), watches["lim"].meanWhileWaiting(), watches["ctl"].meanWhileWaiting())
	for _, room := range []string{"open", "lim"} {
		if in := lines[room].inCount(); 4*in < 3*ctl {
			t.Errorf("room %s: the flood cut the honest admissions to %d, from %d in the control room", room, in, ctl)
		}
	}
}
