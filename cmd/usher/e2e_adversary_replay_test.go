package main

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// advRoomOfOne is a room of one with short sessions that do not renew: each
// admission holds the room for 10 s, so a replay that got in again would
// show as a session the honest waiters lose.
const advRoomOfOne = `  - id: sale
    origin: ORIGIN
    total_active_users: 1
    new_users_per_minute: 60
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: 2s
    json_response_enabled: true
`

// TestE2EAdversaryReplayedWaitingTicket plays issue 8's defect 3: one
// waiting ticket replayed for admissions. A room of one with 10 s sessions
// (no renewal); two honest waiters arrive, then the attacker, then two
// more honest waiters. For at least 60 s the attacker sends, ten times a
// second, its original waiting ticket as it got it, and its latest ticket
// (taking any new ticket it is given, as a browser reloading fast would).
// Asserted: the attacker's place gets at most one admission (distinct
// admitted tickets, opened with the node's key); it passes neither honest
// waiter ahead of it; the honest waiters go in first in, first out, and
// all of them go in; the room never counts more than one session.
func TestE2EAdversaryReplayedWaitingTicket(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advRoomOfOne, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	t0 := time.Now()
	newAdvClient("filler", rt).mustAdmit(t, url, "first")
	stop := make(chan struct{})
	peak := n.watchActive("sale", stop)
	line := newHonestLine()
	line.arrive(t, newAdvClient("h1", rt), url, stop)
	line.arrive(t, newAdvClient("h2", rt), url, stop)

	// The attacker's place: behind h1 and h2.
	nextSecond()
	att := newAdvClient("attacker", rt)
	w0 := att.mustWait(t, url, "on arrival").set
	if w0 == nil {
		t.Fatal("the attacker got no ticket")
	}
	log := newAdmissions(n, "sale")
	replays := 0
	var attackWG sync.WaitGroup
	attackStart := time.Now()
	attackWG.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			// The original ticket, as it was issued; a new ticket it
			// brings back is taken if it is newer than the one held.
			a, err := att.send(url, w0)
			log.note(a, err)
			replays++
			if err == nil && a.set != nil {
				got, err1 := n.open("sale", a.set)
				held, err2 := n.open("sale", att.ticket())
				if err1 == nil && err2 == nil && got.CountedAt.After(held.CountedAt) {
					att.setTicket(a.set)
				}
			}
			// The latest ticket, taking whatever comes back.
			a, err = att.get(url)
			log.note(a, err)
		}
	})

	line.arrive(t, newAdvClient("h3", rt), url, stop)
	line.arrive(t, newAdvClient("h4", rt), url, stop)

	deadline := time.Now().Add(100 * time.Second)
	for !(line.allIn() && time.Since(attackStart) >= 60*time.Second) && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	attackWG.Wait()
	line.wg.Wait()
	maxActive, fails := peak.result()
	took := time.Since(attackStart)

	admitted, origin, requests, first, errs := log.count()
	t.Logf("replayed ticket: %d admission(s) from %d replays of the original ticket and %d requests with the latest, in %.0f s; %d origin answers; admission order: %s",
		admitted, replays, requests-replays, took.Seconds(), origin, line.order(t0, map[string]time.Time{"attacker": first}))
	for _, err := range errs {
		t.Errorf("attacker: %v", err)
	}
	if admitted > 1 {
		t.Errorf("one waiting ticket got %d admissions, want at most 1", admitted)
	}
	passed := 0
	for _, ahead := range []string{"h1", "h2"} {
		if line.passedBy(ahead, first) || (!first.IsZero() && line.in(ahead).IsZero()) {
			passed++
			t.Errorf("the replayed ticket went in (+%.1fs) ahead of %s, who was ahead of it (in at %v)", first.Sub(t0).Seconds(), ahead, line.in(ahead))
		}
	}
	t.Logf("honest waiters passed: %d; highest active count: %d (status polls failed: %d)", passed, maxActive, fails)
	line.checkFIFO(t)
	if maxActive > 1 {
		t.Errorf("the room counted %d sessions at once, over its limit of 1", maxActive)
	}
}

// TestE2EAdversaryCopiedPlace plays issue 8's defect 3 with copies: one
// waiting ticket copied to 20 clients, each of which then behaves as a
// browser (keeps the tickets it is given, checks in when told). An honest
// waiter is ahead of the place, another behind it. Asserted: the 20 copies
// get at most one admission between them; the waiter ahead is not passed;
// the waiter behind still goes in; the room never counts more than one
// session. Logged: how many copies reached the origin (those that came
// within usher's replay grace share the one session).
func TestE2EAdversaryCopiedPlace(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", advRoomOfOne, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	t0 := time.Now()
	newAdvClient("filler", rt).mustAdmit(t, url, "first")
	stop := make(chan struct{})
	peak := n.watchActive("sale", stop)
	line := newHonestLine()
	line.arrive(t, newAdvClient("ahead", rt), url, stop)

	nextSecond()
	place := newAdvClient("copy00", rt).mustWait(t, url, "on arrival").set
	log := newAdmissions(n, "sale")
	var reached sync.Map
	var copiesWG sync.WaitGroup
	for i := range 20 {
		c := newAdvClient(fmt.Sprintf("copy%02d", i), rt)
		c.setTicket(place)
		copiesWG.Go(func() {
			for {
				a, err := c.get(url)
				log.note(a, err)
				wait := time.Second
				switch {
				case err != nil:
				case a.origin:
					reached.Store(c.name, a.recv)
					return
				case a.waiting:
					wait = a.refresh
				}
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
			}
		})
	}
	line.arrive(t, newAdvClient("behind", rt), url, stop)

	deadline := time.Now().Add(80 * time.Second)
	for !line.allIn() && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	close(stop)
	copiesWG.Wait()
	line.wg.Wait()
	maxActive, fails := peak.result()

	admitted, origin, requests, first, errs := log.count()
	var in []string
	reached.Range(func(k, _ any) bool { in = append(in, k.(string)); return true })
	slices.Sort(in)
	t.Logf("20 copies of one place: %d admission(s) in %d requests; %d copies reached the origin (%d origin answers), sharing it; admission order: %s",
		admitted, requests, len(in), origin, line.order(t0, map[string]time.Time{"copies": first}))
	for _, err := range errs {
		t.Errorf("copies: %v", err)
	}
	if admitted > 1 {
		t.Errorf("20 copies of one place got %d admissions, want at most 1", admitted)
	}
	if line.passedBy("ahead", first) || (!first.IsZero() && line.in("ahead").IsZero()) {
		t.Errorf("a copy went in (+%.1fs) ahead of the waiter who was ahead of the place", first.Sub(t0).Seconds())
	}
	t.Logf("highest active count: %d (status polls failed: %d)", maxActive, fails)
	line.checkFIFO(t)
	if maxActive > 1 {
		t.Errorf("the room counted %d sessions at once, over its limit of 1", maxActive)
	}
}
