package admission

import (
	"encoding/binary"
	"flag"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
)

// fairnessRuns is how many runs TestLotteryFairness pools (docs/benchmarks.md):
//
//	go test ./internal/admission -run TestLotteryFairness -v -args -fairness.runs=5
var (
	fairnessRuns     = flag.Int("fairness.runs", 5, "TestLotteryFairness: runs to pool")
	fairnessArrivals = flag.Duration("fairness.arrivals", 5*time.Second, "TestLotteryFairness: the span the waiters arrive over")
)

// lotteryVisitor is one waiter of a fairness run.
type lotteryVisitor struct {
	arrival  int
	at, next time.Time
	spammer  bool
	tk       *usher.Ticket
	in       time.Time
	atOnce   bool // admitted at its first visit: there was no line
}

// lotteryRun is one run's outcome.
type lotteryRun struct {
	arrival, admitted []float64 // per admitted waiter: arrival rank and admission rank, each over n
	politeWait        []float64 // seconds
	spamWait          []float64
	botTries, botIn   int // cookie-less visits while others waited, and admissions among them
	draws, drawIns    int // waiters' draws (check-ins that drew) and admissions by them
}

// runFairness runs one random room on simulated time: n waiters arrive in
// the first 30 s, a third of them spammers checking in eight times as
// often as the page's Refresh, the rest following it; a cookie-less bot
// visits four times a second throughout. Admissions go by the engine's
// verifiable lottery over the embedded store.
func runFairness(t *testing.T, seed uint64, n int, arrivals time.Duration) lotteryRun {
	var clock atomic.Int64
	clock.Store(t0.UnixNano())
	st := clockStore(t, &clock)
	e := New(st, Options{Rand: rand.New(rand.NewPCG(seed, 7)).Uint64})
	room := simRoom()
	room.QueueingMethod = usher.Random
	room.TotalActiveUsers = 20
	room.NewUsersPerMinute = 60
	room.SessionDuration = 20 * time.Second
	room.DisableSessionRenewal = true
	rng := rand.New(rand.NewPCG(seed, 11))
	// The lottery's secrets, kept first (the first writer wins), so that a
	// run is the same every time.
	for ep := draw.Epoch(draw.Window(t0, room.RefreshInterval)); ep <= draw.Epoch(draw.Window(t0.Add(25*time.Minute), room.RefreshInterval))+1; ep++ {
		var secret [32]byte
		binary.LittleEndian.PutUint64(secret[:], rng.Uint64())
		if _, err := st.SaveDrawSeed(t.Context(), room.ID, draw.LotteryID(room.RefreshInterval, ep), secret[:], t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	vs := make([]*lotteryVisitor, n)
	for i := range vs {
		at := t0.Add(time.Duration(rng.Int64N(int64(arrivals)))).Truncate(time.Millisecond)
		vs[i] = &lotteryVisitor{at: at, next: at, spammer: rng.IntN(3) == 0}
	}
	slices.SortFunc(vs, func(a, b *lotteryVisitor) int { return a.at.Compare(b.at) })
	for i, v := range vs {
		v.arrival = i
	}
	var run lotteryRun
	const step = 50 * time.Millisecond
	for now := t0; now.Before(t0.Add(20 * time.Minute)); now = now.Add(step) {
		clock.Store(now.UnixNano())
		waiting, left := 0, 0
		for _, v := range vs {
			if !v.in.IsZero() {
				continue
			}
			left++
			if now.Before(v.at) {
				continue
			}
			waiting++ // arrived, not in
			if now.Before(v.next) {
				continue
			}
			d := decide(t, e, &room, v.tk, now)
			drew := v.tk != nil && !d.Ticket.DrewAt.IsZero() && !d.Ticket.DrewAt.Equal(v.tk.DrewAt)
			if d.Outcome == usher.Admit {
				v.in, v.atOnce = now, v.tk == nil
				if v.tk != nil && !v.tk.Joining {
					run.draws++
					run.drawIns++
				}
				continue
			}
			if drew {
				run.draws++
			}
			v.tk = &d.Ticket
			refresh := checkInAfter(d.Ticket.NextCheckIn.Sub(now), 0) // the page's Refresh, in whole seconds
			if v.spammer {
				v.next = now.Add(refresh / 8)
			} else {
				v.next = now.Add(refresh)
			}
		}
		if left == 0 {
			break
		}
		waiting = 0 // after this step's decisions: arrived and still waiting
		for _, v := range vs {
			if v.in.IsZero() && !now.Before(v.at) {
				waiting++
			}
		}
		if now.Sub(t0)%(250*time.Millisecond) == 0 && waiting > 0 {
			run.botTries++
			if decide(t, e, &room, nil, now).Outcome == usher.Admit {
				run.botIn++
			}
		}
	}
	var in []*lotteryVisitor
	for _, v := range vs {
		if v.in.IsZero() {
			t.Fatalf("run %d: visitor %d never admitted", seed, v.arrival)
		}
		if v.atOnce {
			continue // in at once, on arrival: no line to be fair in
		}
		in = append(in, v)
		w := v.in.Sub(v.at).Seconds()
		if v.spammer {
			run.spamWait = append(run.spamWait, w)
		} else {
			run.politeWait = append(run.politeWait, w)
		}
	}
	sort.SliceStable(in, func(i, j int) bool { return in[i].in.Before(in[j].in) })
	ranks := averageRanks(in)
	byArrival := slices.Clone(in)
	slices.SortFunc(byArrival, func(a, b *lotteryVisitor) int { return a.arrival - b.arrival })
	arrivalRank := map[*lotteryVisitor]int{}
	for i, v := range byArrival {
		arrivalRank[v] = i
	}
	for i, v := range in {
		run.arrival = append(run.arrival, float64(arrivalRank[v])/float64(len(in)))
		run.admitted = append(run.admitted, ranks[i]/float64(len(in)))
	}
	return run
}

// averageRanks gives visitors admitted at the same instant the same
// (average) rank; in is sorted by admission.
func averageRanks(in []*lotteryVisitor) []float64 {
	r := make([]float64, len(in))
	for i := 0; i < len(in); {
		j := i
		for j < len(in) && in[j].in.Equal(in[i].in) {
			j++
		}
		for k := i; k < j; k++ {
			r[k] = float64(i+j-1) / 2
		}
		i = j
	}
	return r
}

// spearman is the Pearson correlation of two rank lists.
func spearman(x, y []float64) float64 {
	mean := func(v []float64) float64 {
		s := 0.0
		for _, a := range v {
			s += a
		}
		return s / float64(len(v))
	}
	mx, my := mean(x), mean(y)
	var sxy, sxx, syy float64
	for i := range x {
		sxy += (x[i] - mx) * (y[i] - my)
		sxx += (x[i] - mx) * (x[i] - mx)
		syy += (y[i] - my) * (y[i] - my)
	}
	return sxy / math.Sqrt(sxx*syy)
}

func meanOf(v []float64) float64 {
	s := 0.0
	for _, a := range v {
		s += a
	}
	return s / float64(len(v))
}

// TestLotteryFairness: over pooled runs of a random room, arrival order
// does not predict admission (Spearman |rho| < 0.1), spammers checking in
// eight times as often as the page wait no less than polite visitors
// (ratio of mean waits >= 0.95), and a cookie-less bot is admitted no
// more often per visit than a waiter per draw.
func TestLotteryFairness(t *testing.T) {
	if testing.Short() {
		t.Skip("five simulated runs")
	}
	var pooled lotteryRun
	for r := range *fairnessRuns {
		run := runFairness(t, uint64(r+1), 300, *fairnessArrivals)
		t.Logf("run %d: rho %+.3f, spammers' wait %.1f s, polite %.1f s, bot %d of %d, draws %d admitted of %d",
			r+1, spearman(run.arrival, run.admitted), meanOf(run.spamWait), meanOf(run.politeWait), run.botIn, run.botTries, run.drawIns, run.draws)
		pooled.arrival = append(pooled.arrival, run.arrival...)
		pooled.admitted = append(pooled.admitted, run.admitted...)
		pooled.spamWait = append(pooled.spamWait, run.spamWait...)
		pooled.politeWait = append(pooled.politeWait, run.politeWait...)
		pooled.botTries += run.botTries
		pooled.botIn += run.botIn
		pooled.draws += run.draws
		pooled.drawIns += run.drawIns
	}
	rho := spearman(pooled.arrival, pooled.admitted)
	ratio := meanOf(pooled.spamWait) / meanOf(pooled.politeWait)
	waiterChance := float64(pooled.drawIns) / float64(pooled.draws)
	botChance := float64(pooled.botIn) / float64(max(pooled.botTries, 1))
	t.Logf("pooled over %d runs (%d waiters): Spearman rho %+.3f; spammers' mean wait %.1f s (%d), polite %.1f s (%d): ratio %.3f; bot %d of %d visits (%.4f) against a waiter's %.4f a draw",
		*fairnessRuns, len(pooled.arrival), rho, meanOf(pooled.spamWait), len(pooled.spamWait), meanOf(pooled.politeWait), len(pooled.politeWait), ratio,
		pooled.botIn, pooled.botTries, botChance, waiterChance)
	if math.Abs(rho) >= 0.1 {
		t.Errorf("arrival order predicts admission: Spearman rho %+.3f, want |rho| < 0.1", rho)
	}
	if ratio < 0.95 {
		t.Errorf("spammers wait %.3f of polite visitors' wait, want >= 0.95", ratio)
	}
	if botChance > waiterChance {
		t.Errorf("a cookie-less bot is admitted %.4f a visit, more than a waiter's %.4f a draw", botChance, waiterChance)
	}
}
