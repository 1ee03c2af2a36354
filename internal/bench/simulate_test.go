package bench_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/bench"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/web"
)

// memStore is a new in-memory embedded store, closed with the test.
func memStore(tb testing.TB) usher.Store {
	tb.Helper()
	st, err := local.Open(local.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

func arrivals(tb testing.TB, spec string) bench.Arrivals {
	tb.Helper()
	a, err := bench.ParseArrivals(spec)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

func simRoom(total, perMinute int, session, refresh time.Duration) usher.Room {
	return usher.Room{ID: "sale", Settings: usher.Settings{
		TotalActiveUsers:    total,
		NewUsersPerMinute:   perMinute,
		SessionDuration:     session,
		RefreshInterval:     refresh,
		QueueingMethod:      usher.FIFO,
		JSONResponseEnabled: true,
	}}
}

func simulate(tb testing.TB, cfg bench.SimConfig) *bench.Timeline {
	tb.Helper()
	if cfg.Store == nil {
		cfg.Store = memStore(tb)
	}
	tl, err := bench.Simulate(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return tl
}

// mediumConfig is a flash crowd of 3,000 in 30 s into a room of 200 with
// abandoners and browsers who renew their sessions.
func mediumConfig(tb testing.TB, seed uint64) bench.SimConfig {
	return bench.SimConfig{
		Room:     simRoom(200, 300, 30*time.Second, 5*time.Second),
		Arrivals: arrivals(tb, "flash:3000@30s"),
		Model: bench.VisitorModel{
			Browse:          bench.MustDist("10s-40s"),
			RequestEvery:    bench.MustDist("2s-8s"),
			AbandonFraction: 0.2,
			Patience:        bench.MustDist("exp:1m"),
		},
		Seed: seed,
	}
}

// flashConfig is the 50,000-visitor flash crowd: 2,000 inside at most,
// 3,000 admissions a minute, 5 min sessions renewed by a request every
// 5-15 s for 4 min, one in five gives up after about 10 min.
func flashConfig(tb testing.TB) bench.SimConfig {
	return bench.SimConfig{
		Room:     simRoom(2000, 3000, 5*time.Minute, 20*time.Second),
		Arrivals: arrivals(tb, "flash:50000@2m"),
		Model: bench.VisitorModel{
			Browse:          bench.MustDist("4m"),
			RequestEvery:    bench.MustDist("5s-15s"),
			AbandonFraction: 0.2,
			Patience:        bench.MustDist("exp:10m"),
		},
		Seed: 1,
	}
}

// TestSimulateKnownOutcome: 10 visitors arrive at once into a room of 5
// whose sessions last 1 min; they browse silently for 3 min. The first 5
// go in at once; the others wait, checking in every refresh interval,
// and go in at their first check-in after the sessions end.
func TestSimulateKnownOutcome(t *testing.T) {
	t.Parallel()
	room := simRoom(5, 100, time.Minute, 10*time.Second)
	cfg := bench.SimConfig{
		Room:     room,
		Arrivals: bench.ArrivalsAt(make([]time.Duration, 10)...),
		Model:    bench.VisitorModel{Browse: bench.MustDist("3m")},
		Seed:     3,
	}
	tl := simulate(t, cfg)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the default
	if !tl.Start.Equal(start) || tl.Horizon {
		t.Fatalf("start %v horizon %v", tl.Start, tl.Horizon)
	}
	var last time.Time
	for i, v := range tl.Visitors {
		if !v.Arrival.Equal(start) || v.Admitted.IsZero() || !v.Left.Equal(v.Admitted.Add(3*time.Minute)) {
			t.Fatalf("%s: arrival %v admitted %v left %v", v.ID, v.Arrival, v.Admitted, v.Left)
		}
		if len(v.Requests) != 1 || !v.Requests[0].Equal(v.Admitted) || !v.AdmittedSent.Equal(v.Admitted) {
			t.Errorf("%s: requests %v, want the admitting one only", v.ID, v.Requests)
		}
		if v.Left.After(last) {
			last = v.Left
		}
		wait := v.Admitted.Sub(start)
		if i < 5 {
			if wait != 0 || len(v.CheckIns) != 0 {
				t.Errorf("%s waited %v with %d check-ins, want admitted at once", v.ID, wait, len(v.CheckIns))
			}
			continue
		}
		// Refresh 10 s with up to 1 s of jitter, in whole seconds: 9 to
		// 11 s; near the front of the line (all of them here) half that.
		if wait < time.Minute || wait > time.Minute+11*time.Second {
			t.Errorf("%s admitted after %v, want within one refresh of 1m", v.ID, wait)
		}
		if len(v.CheckIns) < 6 {
			t.Fatalf("%s: %d check-ins, want 6 or more", v.ID, len(v.CheckIns))
		}
		for k, c := range v.CheckIns {
			if c.Position != 1 || c.Ahead != 0 || c.Refresh < 4*time.Second || c.Refresh > 11*time.Second {
				t.Errorf("%s check-in %d = %+v", v.ID, k, c)
			}
			// A check-in is answered when sent, or held (Engine.Hold) to
			// the next whole second.
			if held := c.At.Sub(c.Sent); held < 0 || held > time.Second || (held > 0 && !c.At.Equal(c.At.Truncate(time.Second))) {
				t.Errorf("%s check-in %d sent %v, answered %v", v.ID, k, c.Sent, c.At)
			}
			next := v.AdmittedSent
			if k+1 < len(v.CheckIns) {
				next = v.CheckIns[k+1].Sent
			}
			if gap := next.Sub(c.At); gap != c.Refresh {
				t.Errorf("%s came back %v after check-in %d, want refreshIntervalSeconds %v", v.ID, gap, k, c.Refresh)
			}
		}
	}
	if !tl.End.Equal(last) {
		t.Errorf("end %v, want the last departure %v", tl.End, last)
	}
	res := bench.Report(tl, bench.RoomLimits(&room))
	if res.Admitted != 10 || res.MaxActive != 5 || res.MaxRate != 5 || res.FIFOInversions != 0 || res.Unfinished != 0 {
		t.Errorf("report %+v", res)
	}
}

// TestSimulateMirrorsGateRounding checks the roundings Simulate mirrors
// against the ones the gate uses.
func TestSimulateMirrorsGateRounding(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{
		-time.Second, 0, time.Nanosecond, time.Millisecond, 999 * time.Millisecond, time.Second,
		time.Second + time.Nanosecond, 18500 * time.Millisecond, 20 * time.Second, 59*time.Second + 1,
		time.Minute, time.Minute + time.Millisecond, 90 * time.Minute, 26 * time.Hour,
	} {
		for _, fallback := range []time.Duration{0, 5 * time.Second} {
			if got, want := bench.RefreshSecondsForTest(d, fallback), web.RefreshSeconds(d, fallback); got != want {
				t.Errorf("refresh seconds of %v (fallback %v) = %d, gate says %d", d, fallback, got, want)
			}
		}
		if got, want := bench.WaitMinutesForTest(d), web.Minutes(d); got != want {
			t.Errorf("wait minutes of %v = %d, gate says %d", d, got, want)
		}
	}
}

func TestSimulateDeterministic(t *testing.T) {
	t.Parallel()
	a := simulate(t, mediumConfig(t, 11))
	b := simulate(t, mediumConfig(t, 11))
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two runs with the same seed differ")
	}
	c := simulate(t, mediumConfig(t, 12))
	if reflect.DeepEqual(a.Visitors, c.Visitors) {
		t.Error("two runs with different seeds are the same")
	}
	cfg := mediumConfig(t, 11)
	lim := bench.RoomLimits(&cfg.Room)
	if ra, rb := bench.Report(a, lim), bench.Report(b, lim); !reflect.DeepEqual(ra, rb) {
		t.Errorf("reports differ:\n%+v\n%+v", ra, rb)
	}
}

// TestSimulateInvariants checks the design's invariants on the report of
// a medium run, with sessions counted exactly (the embedded store) and with
// a second of slack (Tick, as on a shared store).
func TestSimulateInvariants(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name          string
		tick, refresh time.Duration
	}{
		{"at once", 0, 0},
		{"slack", time.Second, 0},
		{"sub-millisecond refresh", 0, 5*time.Second + 300*time.Microsecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := mediumConfig(t, 5)
			cfg.Tick = c.tick
			if c.refresh > 0 {
				cfg.Room.RefreshInterval = c.refresh
			}
			tl := simulate(t, cfg)
			res := bench.Report(tl, bench.RoomLimits(&cfg.Room))
			t.Logf("%+v", res)
			if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 || res.FIFOInversions != 0 || res.RequeuedWhileBrowsing != 0 {
				t.Errorf("invariant broken: max_active_ratio %v, max_rate_ratio %v, fifo_inversions %d, requeued_while_browsing %d",
					res.MaxActiveRatio, res.MaxRateRatio, res.FIFOInversions, res.RequeuedWhileBrowsing)
			}
			if res.Admitted+res.Abandoned != res.Visitors || res.Unfinished != 0 || res.Errors != 0 || tl.Horizon {
				t.Errorf("%d admitted + %d abandoned of %d, %d unfinished, %d errors, horizon %v",
					res.Admitted, res.Abandoned, res.Visitors, res.Unfinished, res.Errors, tl.Horizon)
			}
			if res.MaxActive != cfg.Room.TotalActiveUsers || res.Utilization < 0.9 {
				t.Errorf("max_active %d, utilization %v: the room was not kept full", res.MaxActive, res.Utilization)
			}
			for _, v := range tl.Visitors {
				if v.Abandoned.IsZero() {
					continue
				}
				// An abandoner leaves when its patience runs out, between
				// two check-ins.
				last := v.CheckIns[len(v.CheckIns)-1]
				if !v.Left.Equal(v.Abandoned) || v.Abandoned.Before(last.At) || !v.Abandoned.Before(last.At.Add(last.Refresh+time.Millisecond)) {
					t.Fatalf("%s abandoned at %v after its last check-in %+v", v.ID, v.Abandoned, last)
				}
			}
		})
	}
}

// TestCookieTimes: between two requests, the ticket's times and jitter
// keep whole milliseconds, as the cookie codec keeps them.
func TestCookieTimes(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tk := usher.Ticket{
		ArrivedAt: base.Add(1500 * time.Microsecond), CountedAt: base.Add(2 * time.Millisecond),
		NextCheckIn: base.Add(20*time.Second + 999*time.Microsecond), Jitter: -1500 * time.Microsecond,
	}
	bench.CookieTimesForTest(&tk)
	want := usher.Ticket{
		ArrivedAt: base.Add(time.Millisecond), CountedAt: base.Add(2 * time.Millisecond),
		NextCheckIn: base.Add(20 * time.Second), Jitter: -time.Millisecond,
	}
	if !reflect.DeepEqual(tk, want) {
		t.Errorf("got %+v\nwant %+v", tk, want)
	}
}

func TestSimulateHorizon(t *testing.T) {
	t.Parallel()
	cfg := mediumConfig(t, 1)
	cfg.Horizon = 20 * time.Second
	tl := simulate(t, cfg)
	if !tl.Horizon || !tl.End.Equal(tl.Start.Add(20*time.Second)) {
		t.Fatalf("horizon %v, end %v after the start", tl.Horizon, tl.End.Sub(tl.Start))
	}
	res := bench.Report(tl, bench.RoomLimits(&cfg.Room))
	if res.Unfinished == 0 || res.Admitted == 0 {
		t.Errorf("unfinished %d, admitted %d", res.Unfinished, res.Admitted)
	}
	for _, v := range tl.Visitors {
		if v.Scheduled > 20*time.Second && !v.Arrival.IsZero() {
			t.Fatalf("%s arrived after the horizon", v.ID)
		}
	}
}

func TestSimulateCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cfg := mediumConfig(t, 1)
	cfg.Store = memStore(t)
	tl, err := bench.Simulate(ctx, cfg)
	if !errors.Is(err, context.Canceled) || tl == nil || !tl.Horizon || len(tl.Visitors) != 3000 {
		t.Fatalf("err %v, timeline %v", err, tl != nil)
	}
}

func TestSimulateBadConfig(t *testing.T) {
	t.Parallel()
	good := mediumConfig(t, 1)
	good.Store = memStore(t)
	for name, mod := range map[string]func(*bench.SimConfig){
		"no store":         func(c *bench.SimConfig) { c.Store = nil },
		"no arrivals":      func(c *bench.SimConfig) { c.Arrivals = bench.Arrivals{} },
		"bad model":        func(c *bench.SimConfig) { c.Model.AbandonFraction = 2 },
		"negative horizon": func(c *bench.SimConfig) { c.Horizon = -time.Second },
		"negative tick":    func(c *bench.SimConfig) { c.Tick = -time.Second },
	} {
		cfg := good
		mod(&cfg)
		if tl, err := bench.Simulate(t.Context(), cfg); err == nil || tl != nil {
			t.Errorf("%s: err %v", name, err)
		}
	}
}

// TestSimulateReject: a room that rejects gives every visitor the reject
// page, which Run's visitors take for an error: they try again every
// second and give up after 5.
func TestSimulateReject(t *testing.T) {
	t.Parallel()
	room := simRoom(5, 100, time.Minute, 10*time.Second)
	room.QueueingMethod = usher.Reject
	tl := simulate(t, bench.SimConfig{Room: room, Arrivals: arrivals(t, "steady:3@3s"), Model: bench.DefaultVisitorModel(), Seed: 1})
	for _, v := range tl.Visitors {
		if !v.GaveUp || len(v.Errors) != 5 || !v.Admitted.IsZero() || !v.Left.Equal(v.Errors[4].At) {
			t.Fatalf("%s: %+v", v.ID, v)
		}
		for k, e := range v.Errors {
			if e.Kind != bench.ErrUnexpected || !e.At.Equal(v.Arrival.Add(time.Duration(k)*time.Second)) {
				t.Errorf("%s error %d = %+v", v.ID, k, e)
			}
		}
	}
	if got := tl.ErrorCounts(); got[bench.ErrUnexpected] != 15 {
		t.Errorf("error counts %v", got)
	}
}

// TestSimulateFlash50k is the design's flash crowd: it must finish (the
// benchmark below times it), and hold the invariants.
func TestSimulateFlash50k(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("50,000 visitors: not in -short or -race runs")
	}
	cfg := flashConfig(t)
	cfg.Store = memStore(t)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	start := time.Now()
	tl, err := bench.Simulate(ctx, cfg)
	if err != nil {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
	took := time.Since(start)
	start = time.Now()
	res := bench.Report(tl, bench.RoomLimits(&cfg.Room))
	t.Logf("simulated %v in %v, report in %v: %+v", tl.End.Sub(tl.Start), took, time.Since(start), res)
	if res.MaxActiveRatio > 1 || res.MaxRateRatio > 1 || res.FIFOInversions != 0 || res.Unfinished != 0 {
		t.Errorf("report %+v", res)
	}
}

// BenchmarkSimulateFlash50k times the 50,000-visitor flash crowd: s/op is
// one simulated run (about 3 h of simulated time, 11.6 million requests).
func BenchmarkSimulateFlash50k(b *testing.B) {
	cfg := flashConfig(b)
	for b.Loop() {
		st, err := local.Open(local.Options{})
		if err != nil {
			b.Fatal(err)
		}
		cfg.Store = st
		if _, err := bench.Simulate(context.Background(), cfg); err != nil {
			b.Fatal(err)
		}
		st.Close()
	}
}

func TestSimSummary(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(sec float64) time.Time { return t0.Add(time.Duration(sec * float64(time.Second))) }
	ci := func(sec float64) []bench.CheckIn {
		return []bench.CheckIn{{At: at(sec), Position: 1, Refresh: 10 * time.Second}}
	}
	tl := &bench.Timeline{Start: t0, End: at(300), Visitors: []bench.Visitor{
		{ID: "a", Arrival: at(0), Admitted: at(0), Requests: []time.Time{at(0)}, Left: at(30)},
		{ID: "b", Arrival: at(10), CheckIns: ci(10), Admitted: at(70), Requests: []time.Time{at(70)}, Left: at(100)},
		{ID: "c", Arrival: at(65), CheckIns: ci(65), Abandoned: at(100), Left: at(100)},
		{ID: "d", Arrival: at(70), CheckIns: ci(70), Admitted: at(200), Requests: []time.Time{at(200)}, Left: at(250)},
		{ID: "e"}, // never arrived
	}}
	lim := bench.Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute}
	sum := bench.SimSummary(tl, lim, 10*time.Second)
	if len(sum.Series) != 31 || sum.MaxWaiting != 2 || !sum.Queued || !sum.Drained || sum.DrainedS != 200 {
		t.Errorf("%d samples, max waiting %d, queued %v, drained %v at %v s; want 31, 2, true, true at 200",
			len(sum.Series), sum.MaxWaiting, sum.Queued, sum.Drained, sum.DrainedS)
	}
	hist := func(k ...int) []int {
		h := make([]int, len(bench.WaitBuckets())+1)
		for _, b := range k {
			h[b]++
		}
		return h
	}
	want := []bench.MinuteWaits{
		// a waited 0 s (< 10 s), b 60 s (1-2 min).
		{Minute: 0, Arrivals: 2, Admitted: 2, P50: 0, P95: 60, P99: 60, Hist: hist(0, 3)},
		// c abandoned; d waited 130 s (2-5 min).
		{Minute: 1, Arrivals: 2, Admitted: 1, P50: 130, P95: 130, P99: 130, Hist: hist(4)},
	}
	if !reflect.DeepEqual(sum.Waits, want) {
		t.Errorf("waits\n%+v\nwant\n%+v", sum.Waits, want)
	}

	t.Run("still waiting", func(t *testing.T) {
		tl := &bench.Timeline{Start: t0, End: at(60), Horizon: true, Visitors: []bench.Visitor{
			{ID: "a", Arrival: at(0), CheckIns: ci(0)},
		}}
		sum := bench.SimSummary(tl, lim, 0)
		if !sum.Queued || sum.Drained || sum.DrainedS != 0 || len(sum.Series) != 61 || sum.Waits[0].Admitted != 0 {
			t.Errorf("%+v", sum)
		}
	})
	t.Run("nobody waited", func(t *testing.T) {
		tl := &bench.Timeline{Start: t0, End: at(60), Visitors: []bench.Visitor{
			{ID: "a", Arrival: at(0), Admitted: at(0), Left: at(60)},
		}}
		sum := bench.SimSummary(tl, lim, 0)
		if sum.Queued || !sum.Drained || sum.DrainedS != 0 || sum.MaxWaiting != 0 {
			t.Errorf("%+v", sum)
		}
	})
	t.Run("simulated", func(t *testing.T) {
		cfg := mediumConfig(t, 4)
		tl := simulate(t, cfg)
		sum := bench.SimSummary(tl, bench.RoomLimits(&cfg.Room), time.Second)
		res := bench.Report(tl, bench.RoomLimits(&cfg.Room))
		n, admitted := 0, 0
		for _, m := range sum.Waits {
			n += m.Arrivals
			admitted += m.Admitted
			if m.P50 > m.P95 || m.P95 > m.P99 {
				t.Errorf("minute %d: p50 %v p95 %v p99 %v", m.Minute, m.P50, m.P95, m.P99)
			}
		}
		if n != res.Visitors || admitted != res.Admitted || !sum.Drained || sum.DrainedS <= 30 || sum.DrainedS > res.DurationS {
			t.Errorf("summary %d arrivals, %d admitted, drained %v at %v s; report %+v", n, admitted, sum.Drained, sum.DrainedS, res)
		}
	})
}

// TestSimulateCompactReportsTheSame checks that a compact timeline gives
// the same report as the full one.
func TestSimulateCompactReportsTheSame(t *testing.T) {
	t.Parallel()
	room := simRoom(50, 300, time.Minute, 5*time.Second)
	cfg := bench.SimConfig{
		Room:     room,
		Arrivals: func() bench.Arrivals { a, _ := bench.ParseArrivals("flash:2000@30s"); return a }(),
		Model: bench.VisitorModel{Browse: bench.MustDist("20s-60s"), RequestEvery: bench.MustDist("5s-15s"),
			AbandonFraction: 0.2, Patience: bench.MustDist("exp:2m")},
		Seed: 11,
	}
	full := bench.Report(simulate(t, cfg), bench.RoomLimits(&room))
	cfg.Compact = true
	tl := simulate(t, cfg)
	compact := bench.Report(tl, bench.RoomLimits(&room))
	if !reflect.DeepEqual(full, compact) {
		t.Fatalf("compact report differs:\nfull    %+v\ncompact %+v", full, compact)
	}
	for _, v := range tl.Visitors {
		if len(v.CheckIns) > 3 {
			t.Fatalf("%s kept %d check-ins", v.ID, len(v.CheckIns))
		}
	}
}

// TestSimulateProgress: the simulation reports its last progress with the
// counts of its timeline, Elapsed in simulated time.
func TestSimulateProgress(t *testing.T) {
	t.Parallel()
	cfg := mediumConfig(t, 5)
	var got []bench.Progress
	cfg.ProgressEvery = time.Nanosecond
	cfg.Progress = func(p bench.Progress) { got = append(got, p) }
	tl := simulate(t, cfg)
	res := bench.Report(tl, bench.RoomLimits(&cfg.Room))
	if len(got) < 2 {
		t.Fatalf("%d progress reports", len(got))
	}
	maxWaiting := 0
	for _, p := range got[:len(got)-1] {
		maxWaiting = max(maxWaiting, p.Waiting)
		if p.Done {
			t.Errorf("report before the end says done: %+v", p)
		}
	}
	last := got[len(got)-1]
	if !last.Done || last.Elapsed != tl.End.Sub(tl.Start) || last.Visitors != res.Visitors || last.Arrived != res.Visitors ||
		last.Admitted != res.Admitted || last.Left != res.Visitors || last.Waiting != 0 || maxWaiting == 0 {
		t.Errorf("last report %+v (max waiting %d), report %+v", last, maxWaiting, res)
	}
}
