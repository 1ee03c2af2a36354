package bench_test

import (
	"context"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/local"
)

// millionConfig is a million visitors in 10 minutes into a room of 10,000
// with 10,000 admissions a minute (examples/simulate/sim1m.yaml), with
// usher simulate's default visitors: 4 min of browsing, a request every
// 30 s, one in five giving up after 10 min.
func millionConfig(tb testing.TB) bench.SimConfig {
	return bench.SimConfig{
		Room:     simRoom(10000, 10000, 5*time.Minute, 20*time.Second),
		Arrivals: arrivals(tb, "flash:1000000@10m"),
		Model: bench.VisitorModel{
			Browse:          bench.MustDist("4m"),
			RequestEvery:    bench.MustDist("30s"),
			AbandonFraction: 0.2,
			Patience:        bench.MustDist("10m"),
		},
		Seed:      1,
		Compact:   true,
		Aggregate: true,
	}
}

// BenchmarkSimulateMillion times usher simulate's million-visitor event,
// in aggregate mode and one by one, to its end (USHER_SIM_HORIZON cuts it
// short: a duration of simulated time, such as 1h; the whole event one by
// one takes many minutes).
func BenchmarkSimulateMillion(b *testing.B) {
	cfg := millionConfig(b)
	if h := os.Getenv("USHER_SIM_HORIZON"); h != "" {
		d, err := time.ParseDuration(h)
		if err != nil {
			b.Fatal(err)
		}
		cfg.Horizon = d
	}
	for _, agg := range []bool{true, false} {
		name := "one-by-one"
		if agg {
			name = "aggregate"
		}
		b.Run(name, func(b *testing.B) {
			cfg := cfg
			cfg.Aggregate = agg
			var decisions int64
			for b.Loop() {
				st, err := local.Open(local.Options{})
				if err != nil {
					b.Fatal(err)
				}
				cfg.Store = st
				tl, err := bench.Simulate(context.Background(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				if tl.Aggregate != nil {
					decisions = tl.Aggregate.Decisions
					b.ReportMetric(float64(tl.Aggregate.Skipped), "skipped/op")
				}
				st.Close()
			}
			if decisions > 0 {
				b.ReportMetric(float64(decisions), "decisions/op")
			}
		})
	}
}

// aggregateBoth runs cfg one by one and in aggregate mode, and returns
// both reports and summaries, and the aggregate run's counts.
func aggregateBoth(t *testing.T, cfg bench.SimConfig) (one, agg bench.Result, sumOne, sumAgg bench.QueueSummary, st bench.AggregateStats) {
	t.Helper()
	cfg.Compact = true
	lim := bench.RoomLimits(&cfg.Room)
	cfg.Store = nil
	tl := simulate(t, cfg)
	if tl.Aggregate != nil {
		t.Fatalf("one by one: aggregate counts %+v", tl.Aggregate)
	}
	one, sumOne = bench.Report(tl, lim), bench.SimSummary(tl, lim, time.Second)
	cfg.Aggregate = true
	tl = simulate(t, cfg)
	if tl.Aggregate == nil {
		t.Fatal("aggregate mode: no counts")
	}
	agg, sumAgg = bench.Report(tl, lim), bench.SimSummary(tl, lim, time.Second)
	return one, agg, sumOne, sumAgg, *tl.Aggregate
}

// TestSimulateAggregateReportsTheSame: parking far-back waiters changes
// none of the figures a report gives (waits, drain, utilisation, limit
// ratios, FIFO inversions, estimate errors, abandonments: the whole
// Result and summary), on crowds where most check-ins are parked.
func TestSimulateAggregateReportsTheSame(t *testing.T) {
	t.Parallel()
	cliModel := bench.VisitorModel{ // usher simulate's defaults
		Browse:          bench.MustDist("4m"),
		RequestEvery:    bench.MustDist("30s"),
		AbandonFraction: 0.2,
		Patience:        bench.MustDist("10m"),
	}
	cases := []struct {
		name string
		cfg  bench.SimConfig
	}{
		{"flash10k-tick", bench.SimConfig{Room: simRoom(300, 1000, 3*time.Minute, 10*time.Second),
			Arrivals: arrivals(t, "ramp:10000@5m"), Model: cliModel, Seed: 3, Tick: 2 * time.Second}},
		{"flash10k", bench.SimConfig{Room: simRoom(400, 600, 5*time.Minute, 20*time.Second),
			Arrivals: arrivals(t, "flash:10000@1m"), Model: cliModel, Seed: 7}},
		{"flash10k-exp", bench.SimConfig{Room: simRoom(400, 600, 5*time.Minute, 20*time.Second),
			Arrivals: arrivals(t, "flash:10000@2m"), Model: bench.VisitorModel{Browse: bench.MustDist("1m-5m"),
				RequestEvery: bench.MustDist("exp:20s"), AbandonFraction: 0.3, Patience: bench.MustDist("exp:20m")}, Seed: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			one, agg, sumOne, sumAgg, st := aggregateBoth(t, c.cfg)
			t.Logf("%+v; one by one: %+v", st, one)
			if st.Parked == 0 || st.Skipped < st.Parked {
				t.Fatalf("nothing parked: %+v", st)
			}
			if !reflect.DeepEqual(one, agg) {
				t.Errorf("reports differ:\none by one %+v\naggregate  %+v", one, agg)
			}
			diffSummaries(t, sumOne, sumAgg)
			if agg.MaxActiveRatio > 1 || agg.MaxRateRatio > 1 || agg.FIFOInversions != 0 {
				t.Errorf("invariants: %+v", agg)
			}
		})
	}
}

// TestSimulateAggregateFlash50k is TestSimulateAggregateReportsTheSame on
// the 50,000-visitor flash crowd of docs/benchmarks.md.
func TestSimulateAggregateFlash50k(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("50,000 visitors twice: not in -short or -race runs")
	}
	cfg := flashConfig(t)
	cfg.Model = bench.VisitorModel{Browse: bench.MustDist("4m"), RequestEvery: bench.MustDist("30s"),
		AbandonFraction: 0.2, Patience: bench.MustDist("10m")}
	one, agg, sumOne, sumAgg, st := aggregateBoth(t, cfg)
	t.Logf("%+v", st)
	if st.Skipped < st.Decisions/10 {
		t.Errorf("few check-ins parked: %+v", st)
	}
	if !reflect.DeepEqual(one, agg) {
		t.Errorf("reports differ:\none by one %+v\naggregate  %+v", one, agg)
	}
	diffSummaries(t, sumOne, sumAgg)
}

// TestSimulateAggregateRefused: aggregate mode is refused, naming the
// reason, where its proof does not hold.
func TestSimulateAggregateRefused(t *testing.T) {
	t.Parallel()
	random := simRoom(10, 10, time.Minute, 5*time.Second)
	random.QueueingMethod = usher.Random
	noRate := simRoom(10, 0, time.Minute, 5*time.Second)
	fixed := simRoom(10, 10, time.Minute, 5*time.Second)
	fixed.MaxRefreshInterval = 5 * time.Second
	for _, c := range []struct {
		room usher.Room
		want string
	}{
		{random, "queueing method random"},
		{noRate, "no new_users_per_minute"},
		{fixed, "no adaptive check-ins"},
	} {
		_, err := bench.Simulate(context.Background(), bench.SimConfig{Room: c.room, Arrivals: arrivals(t, "flash:10@1s"),
			Model: bench.VisitorModel{Browse: bench.MustDist("1s"), RequestEvery: bench.MustDist("1s")}, Store: memStore(t), Aggregate: true})
		if err == nil || !strings.Contains(err.Error(), "aggregate mode") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("room %+v: %v, want an error on aggregate mode: %s", c.room.Settings, err, c.want)
		}
	}
}

// diffSummaries fails t unless agg is one within tolerance: the same
// peak, drain and minutes, each minute's waits within 1 % (counts within
// 0.1 % of the minute's arrivals), and the queue and the active count at
// every second within 0.01 % of the peak (at least 2 visitors). Parked
// check-ins record no refusal, and a near-front check-in that comes
// after a refusal in the same second is held to the next: now and then a
// visitor goes in a second sooner or later than one by one.
func diffSummaries(t *testing.T, one, agg bench.QueueSummary) {
	t.Helper()
	if one.MaxWaiting != agg.MaxWaiting || one.Queued != agg.Queued || one.Drained != agg.Drained ||
		one.DrainedS != agg.DrainedS || len(one.Series) != len(agg.Series) || len(one.Waits) != len(agg.Waits) {
		t.Fatalf("summaries differ: peak %d / %d, drained %v %v / %v %v, %d / %d samples, %d / %d minutes",
			one.MaxWaiting, agg.MaxWaiting, one.Drained, one.DrainedS, agg.Drained, agg.DrainedS,
			len(one.Series), len(agg.Series), len(one.Waits), len(agg.Waits))
	}
	tol := max(2, one.MaxWaiting/10000)
	worst := 0
	for i, o := range one.Series {
		a := agg.Series[i]
		d := max(abs(o.Waiting-a.Waiting), abs(o.Active-a.Active), abs(o.AdmittedPerMinute-a.AdmittedPerMinute))
		worst = max(worst, d)
		if d > tol {
			t.Errorf("at %v: one by one %+v, aggregate %+v (tolerance %d)", o.T, o, a, tol)
			break
		}
	}
	for i, o := range one.Waits {
		a := agg.Waits[i]
		ctol := max(1, o.Arrivals/1000)
		if o.Arrivals != a.Arrivals || abs(o.Admitted-a.Admitted) > ctol ||
			!near(o.P50, a.P50) || !near(o.P95, a.P95) || !near(o.P99, a.P99) {
			t.Errorf("minute %d: one by one %+v, aggregate %+v", i, o, a)
		}
	}
	t.Logf("summaries: at most %d visitors apart in a second (tolerance %d)", worst, tol)
}

func abs(n int) int { return max(n, -n) }

// near reports whether b is within 1 % of a.
func near(a, b float64) bool { return math.Abs(a-b) <= 0.01*math.Abs(a) }
