package main

import (
	"testing"
	"time"
)

// TestE2EAdversaryFastCheckInTies plays Queue-it's "speed to get the best
// number" against an honest waiter who arrived in the same second: in
// each of 8 full fifo rooms of one (10 s sessions, 2 s refresh) an honest
// waiter and a client that checks in every 100 ms arrive in the same
// second (in alternating order). Asserted: the fast client does not win
// the ties more often than chance allows (at most 6 of 8; a fair coin
// wins 7 or more with probability 3.5 %).
func TestE2EAdversaryFastCheckInTies(t *testing.T) {
	advSkip(t)
	t.Parallel()
	n := newAdvNode(t, "", "", fastRooms(8, "2s"), "r00")
	start := time.Now()
	honest, fast := raceFast(t, n, 8, false)
	wins, sent, counted := 0, 0, 0
	for i := range fast {
		sent, counted = sent+fast[i].sent, counted+fast[i].counted
		if !fast[i].in.IsZero() && fast[i].in.Before(honest[i].in) {
			wins++
		}
	}
	t.Logf("fast check-ins against same-second honest waiters (refresh 2 s): %d requests, %d counted, in %.0f s; ties won by the fast client: %d of 8",
		sent, counted, time.Since(start).Seconds(), wins)
	if wins > 6 {
		t.Errorf("the fast client won %d of 8 same-second ties against an honest waiter: checking in fast gains an earlier admission", wins)
	}
}
