package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// fastClient checks in every 100 ms, keeping every ticket it is given,
// until it is admitted or stop; it returns when it was admitted, how many
// requests it sent and how many of them were counted (answers that
// brought a new ticket).
func (c *advClient) checkInFast(url string, stop <-chan struct{}) (in time.Time, sent, counted int, err error) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		a, err := c.get(url)
		sent++
		switch {
		case err != nil:
			return time.Time{}, sent, counted, err
		case a.origin:
			return a.recv, sent, counted, nil
		case !a.waiting:
			return time.Time{}, sent, counted, fmt.Errorf("%s: %d %q", c.name, a.status, a.body)
		case a.set != nil:
			counted++
		}
		select {
		case <-stop:
			return time.Time{}, sent, counted, nil
		case <-tick.C:
		}
	}
}

// fastRooms is rooms r00.. of one (10 s sessions that do not renew, the
// refresh interval given), each on its own path.
func fastRooms(count int, refresh string) string {
	var rooms strings.Builder
	for i := range count {
		fmt.Fprintf(&rooms, `  - id: r%02d
    origin: ORIGIN
    routes:
      - path: /r%02d
    total_active_users: 1
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    refresh_interval: %s
    json_response_enabled: true
`, i, i, refresh)
	}
	return rooms.String()
}

// fastResult is what one client of a fast-check-in room got.
type fastResult struct {
	in, lastWait  time.Time
	sent, counted int
	err           error
}

// raceFast fills each room with one session, then makes an honest waiter
// and a fast client wait in each: with earlier, the honest waiter arrives
// a second before the fast client; else both arrive in the same second,
// in alternating order, each pair at another moment of that second. It runs them until all are in (or 60 s) and
// returns their results.
func raceFast(t *testing.T, n *advNode, count int, earlier bool) (honest, fast []fastResult) {
	t.Helper()
	rt := advTransport()
	defer rt.CloseIdleConnections()
	url := func(i int) string { return n.url(fmt.Sprintf("/r%02d/buy", i)) }
	for i := range count {
		newAdvClient(fmt.Sprintf("filler%02d", i), rt).mustAdmit(t, url(i), "filling the room")
	}
	hc := make([]*advClient, count)
	fc := make([]*advClient, count)
	firstAns := make([]advAnswer, count)
	for i := range count {
		hc[i] = newAdvClient(fmt.Sprintf("honest%02d", i), rt)
		fc[i] = newAdvClient(fmt.Sprintf("fast%02d", i), rt)
	}
	nextSecond()
	for i := range count {
		if earlier {
			firstAns[i] = hc[i].mustWait(t, url(i), "on arrival")
		}
	}
	if earlier {
		nextSecond()
	}
	second := time.Now().Truncate(time.Second)
	for i := range count {
		if earlier {
			fc[i].mustWait(t, url(i), "on arrival")
			continue
		}
		// Each pair at its own moment of the second, so that the rooms
		// check in at different phases of the clock.
		time.Sleep(time.Until(second.Add(100*time.Millisecond + time.Duration(i)*700*time.Millisecond/time.Duration(count))))
		if i%2 == 1 {
			fc[i].mustWait(t, url(i), "on arrival")
		}
		firstAns[i] = hc[i].mustWait(t, url(i), "on arrival")
		if i%2 == 0 {
			fc[i].mustWait(t, url(i), "on arrival")
		}
	}
	honest, fast = make([]fastResult, count), make([]fastResult, count)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range count {
		wg.Go(func() {
			time.Sleep(firstAns[i].refresh - time.Since(firstAns[i].recv))
			in, last, err := hc[i].waitHonestly(url(i), stop)
			honest[i] = fastResult{in: in, lastWait: last, err: err}
		})
		wg.Go(func() {
			in, sent, counted, err := fc[i].checkInFast(url(i), stop)
			fast[i] = fastResult{in: in, sent: sent, counted: counted, err: err}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		close(stop)
		<-done
	}
	for i := range count {
		if fast[i].err != nil || honest[i].err != nil {
			t.Errorf("room %d: fast %v, honest %v", i, fast[i].err, honest[i].err)
		}
		if honest[i].in.IsZero() {
			t.Errorf("room %d: the honest waiter was never admitted", i)
		}
	}
	return honest, fast
}

// TestE2EAdversaryFastCheckIns plays Queue-it's "speed to get the best
// number" in fifo rooms: in each of 8 full rooms of one (10 s sessions,
// 2 s refresh) an honest waiter arrives, and a second later a client that
// then checks in every 100 ms, keeping every ticket it is given. Asserted:
// the fast client never goes in before the honest waiter who arrived
// earlier (it is never admitted while that waiter is still told to wait).
// Logged: how many of its requests were counted.
func TestE2EAdversaryFastCheckIns(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", fastRooms(8, "2s"), "r00")
	start := time.Now()
	honest, fast := raceFast(t, n, 8, true)
	passed, sent, counted := 0, 0, 0
	for i := range fast {
		f, h := fast[i], honest[i]
		sent, counted = sent+f.sent, counted+f.counted
		if !f.in.IsZero() && h.lastWait.After(f.in) {
			passed++
			t.Errorf("room %d: the fast client went in (%s) before the honest waiter who arrived a second earlier (%s)",
				i, f.in.Format(time.StampMilli), h.in.Format(time.StampMilli))
		}
	}
	t.Logf("fast check-ins (every 100 ms, refresh 2 s): %d requests, %d of them counted, in %.0f s; honest waiters who arrived a second earlier passed: %d of 8",
		sent, counted, time.Since(start).Seconds(), passed)
}

// draws records the random draws a client took part in, read from the
// tickets it was given (their DrewAt).
type draws struct {
	mu  sync.Mutex
	at  map[string]map[int64]bool // client -> DrewAt (ms) seen
	bad []string
}

// note records the draw in the ticket a answer set, if any.
func (d *draws) note(n *advNode, room, client string, a advAnswer) {
	if a.set == nil {
		return
	}
	tk, err := n.open(room, a.set)
	if err != nil || tk.DrewAt.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.at[client] == nil {
		d.at[client] = map[int64]bool{}
	}
	d.at[client][tk.DrewAt.UnixMilli()] = true
}

// perWindow returns the client's draws and the most it took in one draw
// window of refresh.
func (d *draws) perWindow(client string, refresh time.Duration) (total, most int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	wins := map[int64]int{}
	for ms := range d.at[client] {
		w := ms / refresh.Milliseconds()
		wins[w]++
		most = max(most, wins[w])
	}
	return len(d.at[client]), most
}

// TestE2EAdversaryFastDrawsRandom plays Queue-it's "speed" in a random
// room of two (10 s sessions, 2 s refresh windows): 20 honest waiters
// check in when told, and 5 clients check in every 100 ms, keeping every
// ticket they are given, for 30 s. The draws each took part in are read
// from their tickets (opened with the node's key). Asserted: no fast
// client draws twice in one window. Logged: draws per second of waiting
// and admissions, fast against honest.
func TestE2EAdversaryFastDrawsRandom(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", `  - id: sale
    origin: ORIGIN
    total_active_users: 2
    new_users_per_minute: 600
    session_duration: 10s
    disable_session_renewal: true
    queueing_method: random
    refresh_interval: 2s
    json_response_enabled: true
`, "sale")
	url := n.url("/buy")
	rt := advTransport()
	defer rt.CloseIdleConnections()
	for i := range 2 {
		newAdvClient(fmt.Sprintf("filler%d", i), rt).mustAdmit(t, url, "filling the room")
	}
	d := &draws{at: map[string]map[int64]bool{}}
	stop := make(chan struct{})
	type outcome struct {
		name     string
		fast     bool
		in       time.Time
		arrived  time.Time
		requests int
	}
	var mu sync.Mutex
	var outcomes []outcome
	var wg sync.WaitGroup
	run := func(c *advClient, fast bool) {
		first := c.mustWait(t, url, "on arrival")
		wg.Go(func() {
			o := outcome{name: c.name, fast: fast, arrived: first.recv}
			wait := first.refresh
			if fast {
				wait = 100 * time.Millisecond
			}
			for {
				select {
				case <-stop:
				case <-time.After(wait):
					a, err := c.get(url)
					o.requests++
					if err != nil {
						t.Errorf("%s: %v", c.name, err)
						break
					}
					d.note(n, "sale", c.name, a)
					if a.origin {
						o.in = a.recv
						break
					}
					if !fast {
						wait = a.refresh
					}
					continue
				}
				break
			}
			mu.Lock()
			outcomes = append(outcomes, o)
			mu.Unlock()
		})
	}
	for i := range 20 {
		run(newAdvClient(fmt.Sprintf("honest%02d", i), rt), false)
		if i%4 == 0 {
			run(newAdvClient(fmt.Sprintf("fast%d", i/4), rt), true)
		}
	}
	time.Sleep(30 * time.Second)
	close(stop)
	wg.Wait()
	end := time.Now()
	var fastDraws, honestDraws, fastIn, honestIn, fastReq int
	var fastSecs, honestSecs float64
	for _, o := range outcomes {
		total, most := d.perWindow(o.name, 2*time.Second)
		until := end
		if !o.in.IsZero() {
			until = o.in
		}
		secs := until.Sub(o.arrived).Seconds()
		if o.fast {
			fastDraws, fastSecs, fastReq = fastDraws+total, fastSecs+secs, fastReq+o.requests
			if !o.in.IsZero() {
				fastIn++
			}
			if most > 1 {
				t.Errorf("%s took part in %d draws in one window", o.name, most)
			}
		} else {
			honestDraws, honestSecs = honestDraws+total, honestSecs+secs
			if !o.in.IsZero() {
				honestIn++
			}
		}
	}
	t.Logf("fast clients in a random room: %d requests; %.2f draws a second of waiting (honest %.2f; one window is 2 s); admitted %d of 5 fast, %d of 20 honest",
		fastReq, float64(fastDraws)/fastSecs, float64(honestDraws)/honestSecs, fastIn, honestIn)
}
