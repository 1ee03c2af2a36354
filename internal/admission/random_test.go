package admission

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// chiSquare returns the chi-square statistic of observed counts against
// equal expectation.
func chiSquare(obs []int) float64 {
	total := 0
	for _, o := range obs {
		total += o
	}
	exp := float64(total) / float64(len(obs))
	var x float64
	for _, o := range obs {
		d := float64(o) - exp
		x += d * d / exp
	}
	return x
}

// chi2Crit01 are the chi-square critical values at p = 0.01 by degrees of
// freedom.
var chi2Crit01 = map[int]float64{1: 6.635, 2: 9.210, 3: 11.345, 4: 13.277, 9: 21.666}

type lotteryWaiter struct {
	cohort   int
	tk       *usher.Ticket
	admitted bool
	every    time.Duration // 0: honours the refresh interval
}

// runLottery fills a random room, lets cohorts of waiters arrive while it is
// full, opens slots steadily, and returns admissions per cohort while every
// cohort was present.
func runLottery(t *testing.T, seed uint64, cohorts, perCohort int, spam func(cohort int) time.Duration) []int {
	t.Helper()
	e := newEngine(t)
	e.rng = newRand(seed)
	room := simRoom()
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 10
	room.NewUsersPerMinute = 1000
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	ctx := context.Background()
	// Holders fill the room until 10 s; their sessions end one by one.
	for i := range 10 {
		if _, err := e.Decide(ctx, &room, usher.Visit{Now: t0.Add(time.Duration(i) * 500 * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	var ws []*lotteryWaiter
	type ev struct {
		at time.Time
		w  *lotteryWaiter
	}
	var q []ev
	for c := range cohorts {
		for i := range perCohort {
			w := &lotteryWaiter{cohort: c, every: spam(c)}
			ws = append(ws, w)
			q = append(q, ev{t0.Add(time.Duration(c)*time.Second + time.Duration(i)*time.Millisecond), w})
		}
	}
	counts := make([]int, cohorts)
	end := t0.Add(3 * time.Minute)
	for len(q) > 0 {
		// Pop the earliest.
		k := 0
		for i := range q {
			if q[i].at.Before(q[k].at) {
				k = i
			}
		}
		cur := q[k]
		q = append(q[:k], q[k+1:]...)
		if cur.at.After(end) || cur.w.admitted {
			continue
		}
		d, err := e.Decide(ctx, &room, usher.Visit{Ticket: cur.w.tk, Now: cur.at})
		if err != nil {
			t.Fatal(err)
		}
		tk := d.Ticket
		cur.w.tk = &tk
		if d.Outcome == usher.Admit {
			cur.w.admitted = true
			counts[cur.w.cohort]++
			continue
		}
		next := tk.NextCheckIn
		if cur.w.every > 0 {
			next = cur.at.Add(cur.w.every)
		}
		q = append(q, ev{next, cur.w})
	}
	return counts
}

func TestRandomIsFairAcrossArrivalCohorts(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		counts := runLottery(t, seed, 5, 120, func(int) time.Duration { return 0 })
		total := 0
		for _, c := range counts {
			total += c
		}
		if total < 100 || total >= 600 {
			t.Fatalf("seed %d: %d admitted of 600; the test needs a queue that is partly served", seed, total)
		}
		if x := chiSquare(counts); x > chi2Crit01[4] {
			t.Errorf("seed %d: admissions by arrival cohort %v: chi-square %.2f > %.2f (p < 0.01)", seed, counts, x, chi2Crit01[4])
		}
		t.Logf("seed %d: admissions by arrival cohort %v", seed, counts)
	}
}

func TestRandomReloadingGainsNothing(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		// Cohort 1 reloads every 100 ms, twenty times its refresh rate.
		counts := runLottery(t, seed, 2, 200, func(c int) time.Duration {
			if c == 1 {
				return 100 * time.Millisecond
			}
			return 0
		})
		if x := chiSquare(counts); x > chi2Crit01[1] {
			t.Errorf("seed %d: honest %d vs reloaders %d: chi-square %.2f > %.2f", seed, counts[0], counts[1], x, chi2Crit01[1])
		}
		t.Logf("seed %d: honest %d, reloaders %d", seed, counts[0], counts[1])
	}
}

func TestFIFOThenRandomThenFIFOKeepsOrder(t *testing.T) {
	e := newEngine(t)
	room := simRoom()
	room.TotalActiveUsers = 5
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	for i := range 5 {
		decide(t, e, &room, nil, t0.Add(time.Duration(i)*time.Millisecond))
	}
	// 40 waiters, one per second.
	var tks []usher.Ticket
	for i := range 40 {
		tks = append(tks, decide(t, e, &room, nil, t0.Add(time.Duration(i+1)*time.Second)).Ticket)
	}
	order := func(now time.Time) []int {
		var in []int
		for i := range tks {
			if tks[i].State != usher.Waiting {
				continue
			}
			d := decide(t, e, &room, &tks[i], now)
			tks[i] = d.Ticket
			if d.Outcome == usher.Admit {
				in = append(in, i)
			}
		}
		return in
	}
	// Random for a while: whoever wins.
	room.QueueingMethod = usher.Random
	now := t0.Add(45 * time.Second)
	var randomIn []int
	for range 3 {
		randomIn = append(randomIn, order(now)...)
		now = now.Add(10 * time.Second)
	}
	if len(randomIn) == 0 {
		t.Fatal("nobody admitted while random")
	}
	// Back to FIFO: those still waiting go in by arrival, the earliest
	// first, every round.
	room.QueueingMethod = usher.FIFO
	last := -1
	for range 10 {
		for _, i := range order(now) {
			if i < last {
				t.Fatalf("after switching back to fifo, waiter %d went in after waiter %d", i, last)
			}
			last = i
		}
		now = now.Add(10 * time.Second)
	}
	if last < 0 {
		t.Fatal("nobody admitted after switching back to fifo")
	}
}

func TestDrawIsUniformAndFixedPerWindow(t *testing.T) {
	var bins [10]int
	for i := range 100_000 {
		var id [8]byte
		for k := range id {
			id[k] = byte(i >> (8 * k))
		}
		u := Draw(id, 12345)
		if u < 0 || u >= 1 {
			t.Fatalf("draw %v out of [0, 1)", u)
		}
		bins[int(u*10)]++
		if Draw(id, 12345) != u {
			t.Fatal("the same visitor and window drew twice differently")
		}
	}
	if x := chiSquare(bins[:]); x > chi2Crit01[9] {
		t.Fatalf("draws not uniform: %v (chi-square %.2f)", bins, x)
	}
}
