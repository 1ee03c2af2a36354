package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
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

// admissions counts the distinct admissions that a set of clients got
// (by the admitted tickets they were given, opened with the node's key)
// and the answers of the origin they reached.
type admissions struct {
	n    *advNode
	room string

	mu       sync.Mutex
	at       map[string]time.Time // visitor id + admission time -> first answer
	origin   int
	first    time.Time // the first origin answer
	requests int
	errs     []error
}

func newAdmissions(n *advNode, room string) *admissions {
	return &admissions{n: n, room: room, at: map[string]time.Time{}}
}

// note records one answer.
func (l *admissions) note(a advAnswer, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests++
	if err != nil {
		l.errs = append(l.errs, err)
		return
	}
	if a.origin {
		l.origin++
		if l.first.IsZero() {
			l.first = a.recv
		}
	}
	if a.set == nil {
		return
	}
	tk, err := l.n.open(l.room, a.set)
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("a ticket the node set does not open: %v", err))
		return
	}
	if tk.State == usher.Admitted {
		k := fmt.Sprintf("%x@%d", tk.VisitorID, tk.AdmittedAt.UnixMilli())
		if _, ok := l.at[k]; !ok {
			l.at[k] = a.recv
		}
	}
}

// count returns the distinct admissions, the origin answers, the requests
// and the first origin answer.
func (l *admissions) count() (admitted, origin, requests int, first time.Time, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.at), l.origin, l.requests, l.first, l.errs
}

// honestLine is a line of honest waiters: each arrives, keeps its
// cookies, checks in when told, and leaves once admitted; the line records
// when each went in.
type honestLine struct {
	names    []string
	mu       sync.Mutex
	admitted map[string]time.Time // when the admitting answer came back
	lastWait map[string]time.Time // when the last request told to wait was sent
	wg       sync.WaitGroup
	errs     []error
}

// arrive makes client c arrive (its first request must be told to wait)
// and keeps it checking in until it is admitted or stop is closed.
func (h *honestLine) arrive(t *testing.T, c *advClient, url string, stop <-chan struct{}) {
	t.Helper()
	nextSecond()
	h.join(t, c, url, stop)
}

// join is arrive without waiting for the next second.
func (h *honestLine) join(t *testing.T, c *advClient, url string, stop <-chan struct{}) {
	t.Helper()
	a := c.mustWait(t, url, "on arrival")
	h.mu.Lock()
	h.names = append(h.names, c.name)
	h.lastWait[c.name] = a.sent
	h.mu.Unlock()
	h.wg.Go(func() {
		select {
		case <-stop:
			return
		case <-time.After(a.refresh):
		}
		at, last, err := c.waitHonestly(url, stop)
		h.mu.Lock()
		defer h.mu.Unlock()
		if err != nil {
			h.errs = append(h.errs, err)
		}
		if !at.IsZero() {
			h.admitted[c.name] = at
		}
		if !last.IsZero() {
			h.lastWait[c.name] = last
		}
	})
}

func newHonestLine() *honestLine {
	return &honestLine{admitted: map[string]time.Time{}, lastWait: map[string]time.Time{}}
}

// passedBy reports whether the waiter name was passed by an admission
// whose answer came back at in: it was told to wait by a request sent
// after that (or never admitted while the other was).
func (h *honestLine) passedBy(name string, in time.Time) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !in.IsZero() && h.lastWait[name].After(in)
}

// inCount returns how many were admitted.
func (h *honestLine) inCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.admitted)
}

// lastIn returns the latest admission (zero when none).
func (h *honestLine) lastIn() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var last time.Time
	for _, at := range h.admitted {
		if at.After(last) {
			last = at
		}
	}
	return last
}

func (h *honestLine) allIn() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.admitted) == len(h.names)
}

func (h *honestLine) in(name string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.admitted[name]
}

// order returns the names in order of admission, with offsets from t0.
func (h *honestLine) order(t0 time.Time, extra map[string]time.Time) string {
	h.mu.Lock()
	all := map[string]time.Time{}
	for k, v := range h.admitted {
		all[k] = v
	}
	h.mu.Unlock()
	for k, v := range extra {
		if !v.IsZero() {
			all[k] = v
		}
	}
	names := make([]string, 0, len(all))
	for k := range all {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return all[names[i]].Before(all[names[j]]) })
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s +%.1fs ", k, all[k].Sub(t0).Seconds())
	}
	return strings.TrimSpace(b.String())
}

// checkFIFO fails the test when an honest waiter was never admitted, or
// was passed by one who arrived after it: told to wait by a request sent
// after the later arrival's admitting answer came back (the bench report's
// definition of a FIFO inversion; waiters who find several free slots at
// once go in in the order they check in).
func (h *honestLine) checkFIFO(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, err := range h.errs {
		t.Errorf("honest waiter: %v", err)
	}
	for i, name := range h.names {
		if h.admitted[name].IsZero() {
			t.Errorf("honest waiter %s was never admitted", name)
		}
		for _, later := range h.names[i+1:] {
			if in := h.admitted[later]; !in.IsZero() && h.lastWait[name].After(in) {
				t.Errorf("honest waiter %s was told to wait (request sent %s) after %s, who arrived later, was admitted (%s)",
					name, h.lastWait[name].Format(time.StampMilli), later, in.Format(time.StampMilli))
			}
		}
	}
}

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
