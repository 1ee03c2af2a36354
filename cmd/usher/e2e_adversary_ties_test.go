package main

import (
	"testing"
	"time"
)

// TestE2EAdversaryFastCheckInTies plays Queue-it's "speed to get the best
// number" against an honest waiter who arrived in the same second: in
// each of 16 full fifo rooms of one (10 s sessions, 2 s refresh) an honest
// waiter and a client that checks in every 100 ms arrive in the same
// second (in alternating order). Asserted: the fast client does not win
// more than three quarters of the ties (at most 12 of 16). A fair coin
// wins 13 or more with probability 1.1 %, a client that wins 3 of 8 (as
// measured: 33 of 88) 0.05 %; with 8 rooms and at most 6 wins, as before,
// those were 3.5 % and 0.6 %, and the rooms of one run are not
// independent (one run in 11 failed at 7 of 8).
//
// It does not run in parallel with the other end-to-end tests: the honest
// waiter checks in on a timer, and on a machine whose cores the parallel
// tests saturate (the E2E step runs three-node failovers and real proxies
// beside it) its check-ins come late while the fast client's flood keeps
// arriving, which measures the machine, not usher: 13 of 16 in such a
// run, 2 and 6 of 16 alone.
func TestE2EAdversaryFastCheckInTies(t *testing.T) {
	const ties = 16
	advSkip(t)
	n := newAdvNode(t, "", "", fastRooms(ties, "2s"), "r00")
	start := time.Now()
	honest, fast := raceFast(t, n, ties, false)
	wins, sent, counted := 0, 0, 0
	for i := range fast {
		sent, counted = sent+fast[i].sent, counted+fast[i].counted
		if !fast[i].in.IsZero() && fast[i].in.Before(honest[i].in) {
			wins++
		}
	}
	t.Logf("fast check-ins against same-second honest waiters (refresh 2 s): %d requests, %d counted, in %.0f s; ties won by the fast client: %d of %d",
		sent, counted, time.Since(start).Seconds(), wins, ties)
	if wins > ties*3/4 {
		t.Errorf("the fast client won %d of %d same-second ties against an honest waiter: checking in fast gains an earlier admission", wins, ties)
	}
}
