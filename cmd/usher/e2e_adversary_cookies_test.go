package main

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// advSmallRoom is a room of three on /id with the queueing method, 10 s
// sessions that do not renew and a 2 s refresh interval.
func advSmallRoom(id, method string) string {
	return fmt.Sprintf(`  - id: %s
    origin: ORIGIN
    routes:
      - path: /%s
    total_active_users: 3
    new_users_per_minute: 60
    session_duration: 10s
    disable_session_renewal: true
    queueing_method: %s
    refresh_interval: 2s
    json_response_enabled: true
`, id, id, method)
}

// cookieless sends a GET without a cookie every period until stop, and
// returns when each reached the origin and how many it sent.
func cookieless(c *advClient, url string, period time.Duration, stop <-chan struct{}) (func() ([]time.Time, int, []error), *sync.WaitGroup) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var in []time.Time
	var errs []error
	sent := 0
	wg.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			a, err := c.send(url, nil)
			mu.Lock()
			sent++
			if err != nil {
				errs = append(errs, err)
			} else if a.origin {
				in = append(in, a.recv)
			}
			mu.Unlock()
		}
	})
	return func() ([]time.Time, int, []error) {
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return in, sent, errs
	}, &wg
}

// TestE2EAdversaryCookielessBotRandom plays issue 8's defect 4 (random
// queueing re-rolled by requests without a cookie) and Queue-it's
// "disabling cookies to avoid the queue logic": in a random room of three
// (10 s sessions, 2 s refresh) 30 honest waiters keep their cookies and
// check in when told, while a bot sends 10 requests a second without a
// cookie for 60 s. A second room, identical, has the same honest line and
// no bot: the control. Asserted: the bot's admissions are at most twice an
// honest waiter's average, and none while honest waiters wait (here: at
// all, since the line never empties). Logged: both rooms' honest
// admissions and mean active sessions while visitors waited, which is what
// the bot costs the honest line.
func TestE2EAdversaryCookielessBotRandom(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advSmallRoom("bot", "random")+advSmallRoom("ctl", "random"), "bot")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	stop := make(chan struct{})
	lines := map[string]*honestLine{}
	watches := map[string]*activeWatch{}
	for _, room := range []string{"bot", "ctl"} {
		url := n.url("/" + room + "/item")
		for i := range 3 {
			newAdvClient(fmt.Sprintf("%s-filler%d", room, i), rt).mustAdmit(t, url, "filling the room")
		}
		watches[room] = n.watchActive(room, stop)
		lines[room] = newHonestLine()
		for i := range 30 {
			lines[room].join(t, newAdvClient(fmt.Sprintf("%s-h%02d", room, i), rt), url, stop)
		}
	}
	start := time.Now()
	result, _ := cookieless(newAdvClient("bot", rt), n.url("/bot/item"), 100*time.Millisecond, stop)
	time.Sleep(60 * time.Second)
	close(stop)
	botIn, sent, errs := result()
	took := time.Since(start)
	for _, l := range lines {
		l.wg.Wait()
	}
	for _, err := range errs {
		t.Errorf("bot: %v", err)
	}
	honest := lines["bot"].inCount()
	avg := float64(honest) / 30
	t.Logf("cookie-less bot in a random room: %d admissions from %d requests in %.0f s; 30 honest waiters: %d admissions (%.2f each); control room without the bot: %d",
		len(botIn), sent, took.Seconds(), honest, avg, lines["ctl"].inCount())
	t.Logf("mean active sessions while visitors waited (limit 3): %.2f with the bot, %.2f in the control room",
		watches["bot"].meanWhileWaiting(), watches["ctl"].meanWhileWaiting())
	for room, w := range watches {
		if peak, _ := w.result(); peak > 3 {
			t.Errorf("room %s counted %d sessions at once, over its limit of 3", room, peak)
		}
	}
	if honest == 0 {
		t.Fatal("no honest waiter was admitted: the test measured nothing")
	}
	if float64(len(botIn)) > 2*avg {
		t.Errorf("the cookie-less bot got %d admissions, over twice an honest waiter's %.2f", len(botIn), avg)
	}
	last := lines["bot"].lastIn()
	while := 0
	for _, at := range botIn {
		if !lines["bot"].allIn() || at.Before(last) {
			while++
		}
	}
	if while > 0 {
		t.Errorf("the cookie-less bot got in %d times while honest waiters waited", while)
	}
}

// TestE2EAdversaryCookielessFIFO plays Queue-it's "disabling cookies to
// avoid the queue logic" in a full fifo room of three (10 s sessions, 2 s
// refresh): nine honest waiters arrive a second apart and check in when
// told; a client that never keeps a cookie asks twice a second, from
// before the first honest arrival until every honest waiter is in.
// Asserted: it never gets in while an honest waiter waits; the honest
// waiters go in first in, first out.
func TestE2EAdversaryCookielessFIFO(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advSmallRoom("sale", "fifo"), "sale")
	url := n.url("/sale/item")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	t0 := time.Now()
	for i := range 3 {
		newAdvClient(fmt.Sprintf("filler%d", i), rt).mustAdmit(t, url, "filling the room")
	}
	stop := make(chan struct{})
	peak := n.watchActive("sale", stop)
	line := newHonestLine()
	botStop := make(chan struct{})
	result, _ := cookieless(newAdvClient("no-cookies", rt), url, 500*time.Millisecond, botStop)
	for i := range 9 {
		line.arrive(t, newAdvClient(fmt.Sprintf("h%d", i+1), rt), url, stop)
	}
	deadline := time.Now().Add(70 * time.Second)
	for !line.allIn() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	close(botStop)
	botIn, sent, errs := result()
	close(stop)
	line.wg.Wait()
	for _, err := range errs {
		t.Errorf("no-cookies client: %v", err)
	}
	last := line.lastIn()
	while := 0
	for _, at := range botIn {
		if !line.allIn() || at.Before(last) {
			while++
		}
	}
	maxActive, _ := peak.result()
	t.Logf("client without cookies in a fifo room: %d admissions from %d requests while honest waiters waited; honest order: %s; highest active count %d",
		while, sent, line.order(t0, nil), maxActive)
	if while > 0 {
		var ats []string
		for _, at := range botIn {
			ats = append(ats, fmt.Sprintf("+%.2fs", at.Sub(t0).Seconds()))
		}
		t.Errorf("the client without cookies got in %d times while honest waiters waited (at %v)", while, ats)
	}
	line.checkFIFO(t)
	if maxActive > 3 {
		t.Errorf("the room counted %d sessions at once, over its limit of 3", maxActive)
	}
}
