package admission

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestLinesFreezeThePrior: the prior is read when a line forms and kept
// while it stands, whatever the room learns meanwhile; a line that forms
// after a gap reads it afresh; a factor out of bounds is clamped, and no
// factor, or one that is no number, is 1.
func TestLinesFreezeThePrior(t *testing.T) {
	var l lines
	prior, reads := 2.0, 0
	fn := func(room string) (float64, bool) {
		reads++
		if room != "sale" {
			return 0, false
		}
		return prior, true
	}
	const gap = 10 * time.Second
	if f := l.factor("sale", t0, gap, fn); f != 2 {
		t.Fatalf("a new line: factor %v, want the prior 2", f)
	}
	prior = 2.5
	for i := 1; i <= 5; i++ { // check-ins 9 s apart: the line stands
		if f := l.factor("sale", t0.Add(time.Duration(i)*9*time.Second), gap, fn); f != 2 {
			t.Fatalf("check-in %d of the standing line: factor %v, want the 2 it formed with", i, f)
		}
	}
	if reads != 1 {
		t.Errorf("the prior was read %d times while one line stood, want once", reads)
	}
	if f := l.factor("sale", t0.Add(time.Minute+gap), gap, fn); f != 2.5 {
		t.Errorf("a line formed after a gap: factor %v, want the prior it reads now, 2.5", f)
	}
	if f := l.factor("other", t0, gap, fn); f != 1 {
		t.Errorf("a room with no prior: factor %v, want 1", f)
	}
	if f := l.factor("none", t0, gap, nil); f != 1 {
		t.Errorf("no prior function: factor %v, want 1", f)
	}
	for _, tc := range []struct{ in, want float64 }{{10, MaxPrior}, {0.1, MinPrior}, {math.NaN(), 1}, {math.Inf(1), 1}, {-1, 1}, {0, 1}} {
		var l lines
		p := tc.in
		if f := l.factor("sale", t0, gap, func(string) (float64, bool) { return p, true }); f != tc.want {
			t.Errorf("prior %v: factor %v, want %v", tc.in, f, tc.want)
		}
	}
}

// collect is an Observer keeping the admissions it is told of.
type collect struct {
	mu  sync.Mutex
	obs []Observation
}

func (c *collect) Observe(_ string, o Observation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.What == Admitted && o.Announced > 0 {
		c.obs = append(c.obs, o)
	}
}

// TestColdPagesScaledByThePrior: two engines see the same line (a room of
// one whose session lasts a minute, ten waiters), one with a prior of 2:
// its first pages announce twice the wait the limits forecast, and at
// admission it tells the observer the forecast without the factor, so
// that what the room learns does not compound its own prior.
func TestColdPagesScaledByThePrior(t *testing.T) {
	room := &usher.Room{ID: "sale", Name: "Sale", Settings: usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 60, SessionDuration: time.Minute, RefreshInterval: 10 * time.Second,
		QueueingMethod: usher.FIFO,
	}}
	run := func(prior float64) ([]time.Duration, []Observation) {
		obs := &collect{}
		opts := Options{Rand: rand.New(rand.NewPCG(1, 2)).Uint64, Observer: obs}
		if prior > 0 {
			opts.Prior = func(string) (float64, bool) { return prior, true }
		}
		e := New(memStore(t), opts)
		e.noServing = true // the forecast alone: every page is cold
		first := decide(t, e, room, nil, t0)
		if first.Outcome != usher.Admit {
			t.Fatalf("the first visitor: %v", first.Outcome)
		}
		var waits []time.Duration
		var tks []usher.Ticket
		for i := range 10 {
			d := decide(t, e, room, nil, t0.Add(time.Duration(i+1)*time.Second))
			if d.Outcome != usher.Wait || !d.WaitKnown {
				t.Fatalf("waiter %d: %v, wait known %v", i, d.Outcome, d.WaitKnown)
			}
			waits = append(waits, d.EstimatedWait)
			tks = append(tks, d.Ticket)
		}
		// The waiters check in until admitted, one a minute.
		now := t0
		for len(obs.obs) < 3 && now.Before(t0.Add(10*time.Minute)) {
			now = now.Add(5 * time.Second)
			for i := range tks {
				if tks[i].State == usher.Waiting && !now.Before(tks[i].NextCheckIn) {
					tks[i] = decide(t, e, room, &tks[i], now).Ticket
				}
			}
		}
		if len(obs.obs) < 3 {
			t.Fatalf("prior %v: %d admissions in 10 minutes, want 3", prior, len(obs.obs))
		}
		return waits, obs.obs
	}
	plain, plainObs := run(0)
	scaled, scaledObs := run(2)
	for i := range plain {
		if want := 2 * plain[i]; scaled[i] < want-time.Millisecond || scaled[i] > want+time.Millisecond {
			t.Errorf("waiter %d: announced %v with the prior 2, want twice the %v without", i, scaled[i], plain[i])
		}
	}
	for i := range scaledObs {
		p, s := plainObs[i], scaledObs[i]
		if p.Forecast != p.Announced || p.Forecast == 0 {
			t.Errorf("admission %d without a prior: forecast %v, announced %v: want the same, not zero", i, p.Forecast, p.Announced)
		}
		if d := s.Forecast - s.Announced/2; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("admission %d with the prior 2: forecast %v, announced %v: want half", i, s.Forecast, s.Announced)
		}
	}
}
