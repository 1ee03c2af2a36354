package selfbench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// fakeUsher stands in for usher in tests of the crowd's timing: every
// check-in takes latency, gives the waiter a ticket named after it and
// tells it to come back after interval; it records when each waiter's
// requests arrived.
type fakeUsher struct {
	latency  atomic.Int64 // nanoseconds
	interval int          // seconds
	// holdEvery, when not zero, holds every holdEvery-th check-in of a
	// known ticket for hold before answering, as usher holds near-front
	// check-ins, and says so.
	holdEvery int
	hold      time.Duration
	checkIns  int

	mu    sync.Mutex
	calls map[string][]time.Time // by ticket ("" for newcomers, then "t<n>")
	next  int
	open  int
}

func (f *fakeUsher) conn(dials *atomic.Int64) checkInConn {
	dials.Add(1)
	f.mu.Lock()
	f.open++
	f.mu.Unlock()
	return &fakeConn{f: f}
}

type fakeConn struct {
	f    *fakeUsher
	body []byte
	held time.Duration
}

func (c *fakeConn) get(req []byte, name string, cookie []byte) (int, []byte, []byte, error) {
	f := c.f
	f.mu.Lock()
	ticket := string(cookie)
	if ticket == "" {
		ticket = "t" + strconv.Itoa(f.next)
		f.next++
	}
	f.calls[ticket] = append(f.calls[ticket], time.Now())
	c.held = 0
	if cookie != nil && f.holdEvery > 0 {
		if f.checkIns++; f.checkIns%f.holdEvery == 0 {
			c.held = f.hold
		}
	}
	f.mu.Unlock()
	time.Sleep(c.held + time.Duration(f.latency.Load()))
	c.body = fmt.Appendf(c.body[:0], `{"usherWaitingRoom":{"inWaitingRoom":true,"refreshIntervalSeconds":%d,"position":7}}`, f.interval)
	return 200, []byte(ticket), c.body, nil
}

func (c *fakeConn) lastHeld() time.Duration { return c.held }

func (c *fakeConn) close() {}

// TestCrowdFollowsIntervals: newcomers arrive standingArrivals a second,
// not at once; each waiter then checks in its interval plus the page's
// slack after its last answer (at the end of that moment's 10 ms slot),
// never earlier, on connections opened once; a step's figures are those
// of its check-ins (on simulated time).
func TestCrowdFollowsIntervals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeUsher{interval: 3, calls: map[string][]time.Time{}}
		f.latency.Store(int64(5 * time.Millisecond))
		c := startCrowd(context.Background(), []byte("GET / HTTP/1.1\r\n"), "__usher_wr_x", 16, 1000, 8*time.Second, f.conn)
		defer c.stop()
		start := time.Now()
		if err := c.join(1000); err != nil {
			t.Fatal(err)
		}
		// 1,000 newcomers at 2,500 a second: 0.4 s, 25 in each 10 ms slot.
		perSlot := map[int64]int{}
		var last time.Time
		for _, calls := range f.calls {
			first := calls[0]
			perSlot[int64(first.Sub(start)/wheelSlot)]++
			if first.After(last) {
				last = first
			}
		}
		if d := last.Sub(start); d < 390*time.Millisecond || d > 450*time.Millisecond {
			t.Errorf("the last newcomer came %v after the first, want about 0.4 s", d)
		}
		for s, n := range perSlot {
			if n > 26 {
				t.Errorf("%d newcomers in the slot at %v, want at most 25 (2,500 a second)", n, time.Duration(s)*wheelSlot)
			}
		}
		step := c.measure(context.Background(), 8*time.Second)
		// Every waiter checks in every 3.2 s (plus the latency, rounded up
		// to the slot): twice in the 8 s after all of them joined.
		if sent := step.CheckInsPerS * 8; sent < 1999 || sent > 2001 {
			t.Errorf("%.0f check-ins in 8 s, want 2,000", sent)
		}
		// They joined over 0.4 s, so they come back over 0.4 s: at
		// least half of them in one second, twice the average or more.
		if step.PeakPerS < 500 || step.PeakPerS > 1000 {
			t.Errorf("%d check-ins due in the busiest second, want 500 to 1,000", step.PeakPerS)
		}
		if step.P50ms != 5 || step.P99ms != 5 || step.LateP99ms != 0 || step.SchedP99ms != 5 {
			t.Errorf("p50 %v, p99 %v, late %v, from schedule %v ms: want 5, 5, 0, 5", step.P50ms, step.P99ms, step.LateP99ms, step.SchedP99ms)
		}
		if step.Errors != 0 || step.Connections != 0 || step.Waiters != 1000 {
			t.Errorf("errors %d, connections %d, waiters %d", step.Errors, step.Connections, step.Waiters)
		}
		if f.open != standingWorkers {
			t.Errorf("%d connections, want %d", f.open, standingWorkers)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		for ticket, calls := range f.calls {
			for k := 1; k < len(calls); k++ {
				// The answer came latency after the request; the next
				// check-in is due interval + slack later, at its slot's end.
				due := calls[k-1].Add(5*time.Millisecond + 3*time.Second + pageSlack)
				due = start.Add((due.Sub(c.origin)+wheelSlot-1)/wheelSlot*wheelSlot - start.Sub(c.origin))
				if !calls[k].Equal(due) {
					t.Fatalf("waiter %s: check-in %d at %v, want %v (previous at %v)", ticket, k, calls[k].Sub(start), due.Sub(start), calls[k-1].Sub(start))
				}
			}
		}
	})
}

// TestCrowdCountsLateness: when usher is slower than the crowd's
// connections can carry, check-ins go out late and the p99 from each
// check-in's scheduled moment shows it, while the p99 from sending alone
// would not (coordinated omission).
func TestCrowdCountsLateness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeUsher{interval: 10, calls: map[string][]time.Time{}}
		f.latency.Store(int64(5 * time.Millisecond))
		c := startCrowd(context.Background(), []byte("GET / HTTP/1.1\r\n"), "__usher_wr_x", 16, 5000, 10*time.Second, f.conn)
		defer c.stop()
		// 5,000 newcomers in 2 s, answered in 5 ms; their next check-ins,
		// 2,500 a second again, meet answers of 200 ms: 256 connections
		// carry 1,280 a second.
		if err := c.join(5000); err != nil {
			t.Fatal(err)
		}
		f.latency.Store(int64(200 * time.Millisecond))
		step := c.measure(context.Background(), 10*time.Second)
		if step.P99ms != 200 {
			t.Errorf("p99 from sending %v ms, want 200", step.P99ms)
		}
		if step.LateP99ms < 500 || step.SchedP99ms < step.LateP99ms+200 {
			t.Errorf("late p99 %v ms, p99 from schedule %v ms: want the lateness (over 500 ms) counted in", step.LateP99ms, step.SchedP99ms)
		}
		if max := float64(standingWorkers) / 0.2; step.CheckInsPerS > max*1.01 {
			t.Errorf("%.0f check-ins a second through %d connections of 200 ms each (at most %.0f)", step.CheckInsPerS, standingWorkers, max)
		}
	})
}

// TestCrowdTellsHoldsApart: a tenth of the check-ins are held 800 ms by
// usher before their answer (near-front waiters waiting for a place that
// frees on the next second): the p99 of the latency counts the hold, the
// delay a waiter experiences does not, and the held check-ins are
// counted; the bound is judged on the delay.
func TestCrowdTellsHoldsApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeUsher{interval: 3, calls: map[string][]time.Time{}, holdEvery: 10, hold: 800 * time.Millisecond}
		f.latency.Store(int64(5 * time.Millisecond))
		c := startCrowd(context.Background(), []byte("GET / HTTP/1.1\r\n"), "__usher_wr_x", 16, 1000, 8*time.Second, f.conn)
		defer c.stop()
		if err := c.join(1000); err != nil {
			t.Fatal(err)
		}
		step := c.measure(context.Background(), 8*time.Second)
		sent := int(step.CheckInsPerS*8 + 0.5)
		if step.P99ms != 805 {
			t.Errorf("p99 %v ms, want the held ones' 805", step.P99ms)
		}
		if step.DelayP99ms != 5 || step.NotHeldP99ms != 5 {
			t.Errorf("delay p99 %v ms, p99 of those not held %v ms: want 5 and 5", step.DelayP99ms, step.NotHeldP99ms)
		}
		if step.Held < sent/10-2 || step.Held > sent/10+2 {
			t.Errorf("%d of %d check-ins counted held, want a tenth", step.Held, sent)
		}
	})
}
