package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func TestActiveSessions(t *testing.T) {
	lim := Limits{TotalActiveUsers: 2, NewUsersPerMinute: 100, SessionDuration: 10 * time.Second}
	tl := &Timeline{Start: at(0), End: at(30), Visitors: []Visitor{
		admitted("a", 0, 0, 0, 5.2), // session [0, ceil(15.2)=16)
		admitted("b", 3, 3, 3),      // [3, 13)
		admitted("c", 16, 16, 16),   // [16, 26): starts as a ends
		admitted("d", 12, 12.9),     // no requests listed: [12.9, ceil(22.9)=23)
	}}
	ix := newIndex(tl, lim)
	for _, c := range []struct {
		sec  float64
		want int
	}{
		{0, 1}, {2.9, 1}, {3, 2}, {12.8, 2}, {12.9, 3}, {13, 2}, {15.99, 2}, {16, 2}, {22.99, 2}, {23, 1}, {26, 0},
	} {
		if got := ix.active(at(c.sec).UnixNano()); got != c.want {
			t.Errorf("active at %vs = %d, want %d", c.sec, got, c.want)
		}
	}
	res := Report(tl, lim)
	if res.MaxActive != 3 {
		t.Errorf("MaxActive = %d, want 3", res.MaxActive)
	}
	approx(t, "MaxActiveRatio", res.MaxActiveRatio, 1.5)

	t.Run("renewal disabled", func(t *testing.T) {
		lim := lim
		lim.DisableSessionRenewal = true
		// a's session ends at ceil(0 + 10s) = 10 whatever it requested.
		if got := sessionEnd(&tl.Visitors[0], lim); !got.Equal(at(10)) {
			t.Errorf("session end = %v, want %v", got, at(10))
		}
		// a ended at 10, before d came at 12.9: at most two at once.
		if res := Report(tl, lim); res.MaxActive != 2 {
			t.Errorf("MaxActive = %d, want 2", res.MaxActive)
		}
	})

	t.Run("latency", func(t *testing.T) {
		// Sent at 1.4, answered at 1.6, last request sent at 4.9: the
		// session certainly holds from 1.6 to ceil(4.9 + 10) = 15.
		v := Visitor{Arrival: at(1.4), AdmittedSent: at(1.4), Admitted: at(1.6), Requests: ats(1.4, 4.9)}
		ix := newIndex(&Timeline{Visitors: []Visitor{v}}, lim)
		if ix.active(at(1.5).UnixNano()) != 0 || ix.active(at(1.6).UnixNano()) != 1 ||
			ix.active(at(14.99).UnixNano()) != 1 || ix.active(at(15).UnixNano()) != 0 {
			t.Errorf("session is not [1.6, 15): starts %v ends %v", ix.sessStart, ix.sessEnd)
		}
	})
}

func TestMaxRateWindow(t *testing.T) {
	type adm struct{ sent, recv float64 }
	cases := []struct {
		name string
		adms []adm
		want int
	}{
		{"none", nil, 0},
		{"one", []adm{{5, 5}}, 1},
		{"exactly 60 s apart is two windows", []adm{{0, 0}, {60, 60}}, 1},
		{"just under 60 s is one window", []adm{{0, 0}, {59.999, 59.999}}, 2},
		{"sliding", []adm{{0, 0}, {30, 30}, {60, 60}, {90, 90}}, 2},
		{"burst", []adm{{0, 0}, {0, 0}, {0, 0}, {59.9, 59.9}, {60, 60}}, 4},
		{"unsorted", []adm{{90, 90}, {0, 0}, {61, 61}, {30, 30}, {60.5, 60.5}}, 3}, // 30, 60.5, 61
		{"latency makes it uncertain", []adm{{0, 0.05}, {59.99, 60}}, 1},
		{"certain despite latency", []adm{{0, 0.05}, {59.9, 59.95}}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl := &Timeline{}
			for _, a := range c.adms {
				tl.Visitors = append(tl.Visitors, Visitor{Arrival: at(a.sent), AdmittedSent: at(a.sent), Admitted: at(a.recv)})
			}
			res := Report(tl, Limits{TotalActiveUsers: 100, NewUsersPerMinute: 2, SessionDuration: time.Minute})
			if res.MaxRate != c.want {
				t.Errorf("MaxRate = %d, want %d", res.MaxRate, c.want)
			}
			approx(t, "MaxRateRatio", res.MaxRateRatio, float64(c.want)/2)
		})
	}
}

func TestUtilization(t *testing.T) {
	// x is inside from 0 (session to 10 s); w waits from 0 and is admitted
	// at 1.0; w2 waits from 0.5 and abandons at 1.5. A queue exists over
	// [0, 1.5): 15 samples. Before 1.0, 1 of 2 places is free (the rate
	// allows 9 more); from 1.0 none. Mean free = 10/15, utilisation =
	// 1 - (10/15)/2 = 2/3.
	tl := &Timeline{Start: at(0), End: at(2), Visitors: []Visitor{
		admitted("x", 0, 0, 0),
		{ID: "w", Arrival: at(0), CheckIns: checkIns(0), Admitted: at(1), Requests: ats(1)},
		{ID: "w2", Arrival: at(0.5), CheckIns: checkIns(0.5), Abandoned: at(1.5), Left: at(1.5)},
	}}
	lim := Limits{TotalActiveUsers: 2, NewUsersPerMinute: 10, SessionDuration: 10 * time.Second, RefreshInterval: 2 * time.Second}
	res := Report(tl, lim)
	approx(t, "Utilization", res.Utilization, 2.0/3)
	approx(t, "QueueS", res.QueueS, 1.5)
	approx(t, "MaxIdleS", res.MaxIdleS, 1.0)
	approx(t, "MaxIdleRatio", res.MaxIdleRatio, 0.5)

	t.Run("rate bound", func(t *testing.T) {
		// With one admission a minute, x used the minute's only slot: no
		// free slot while anyone waits.
		lim := lim
		lim.NewUsersPerMinute = 1
		res := Report(tl, lim)
		approx(t, "Utilization", res.Utilization, 1)
		approx(t, "MaxIdleS", res.MaxIdleS, 0)
	})
	t.Run("no queue", func(t *testing.T) {
		res := Report(&Timeline{Start: at(0), End: at(5), Visitors: []Visitor{admitted("x", 0, 0, 0)}}, lim)
		approx(t, "Utilization", res.Utilization, 0)
		approx(t, "QueueS", res.QueueS, 0)
	})
}

func TestFIFOInversions(t *testing.T) {
	b := admitted("b", 11.1, 12, 12) // arrives in second 11, admitted at 12
	cases := []struct {
		name     string
		visitors []Visitor
		want     int
	}{
		{"one", []Visitor{
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 15), Admitted: at(16)}, b,
		}, 1},
		{"none: a stopped waiting before b got in", []Visitor{
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 11.5), Admitted: at(11.9)}, b,
		}, 0},
		{"at the same moment counts", []Visitor{
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 12), Admitted: at(13)}, b,
		}, 1},
		{"same-second arrivals are not inversions", []Visitor{
			{ID: "a", Arrival: at(11.05), CheckIns: checkIns(11.05, 15), Admitted: at(16)}, b,
		}, 0},
		{"an abandoned visitor's earlier waits count", []Visitor{
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 13), Abandoned: at(14), Left: at(14)}, b,
		}, 1},
		{"each waiter once", []Visitor{
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 13, 14, 15), Admitted: at(16)},
			b, admitted("c", 12.5, 13.5, 13.5),
			{ID: "d", Arrival: at(9), CheckIns: checkIns(9, 14), Admitted: at(16)},
		}, 2},
		{"a later arrival waiting is not one", []Visitor{
			admitted("e", 5, 6, 6),
			{ID: "a", Arrival: at(10.2), CheckIns: checkIns(10.2, 15), Admitted: at(16)},
		}, 0},
		{"a straddling first answer is not one", []Visitor{
			// a sent at 10.99 but got its answer at 11.01: usher may have
			// put it in second 11, as b.
			{ID: "a", Arrival: at(10.99), ArrivalAck: at(11.01), CheckIns: checkIns(11.01, 15), Admitted: at(16)}, b,
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := Report(&Timeline{Visitors: c.visitors}, Limits{TotalActiveUsers: 10, SessionDuration: time.Minute})
			if res.FIFOInversions != c.want {
				t.Errorf("FIFOInversions = %d, want %d", res.FIFOInversions, c.want)
			}
		})
	}
}

func TestWaitPercentiles(t *testing.T) {
	tl := &Timeline{}
	for i := 10; i >= 1; i-- { // waits of 1 to 10 s, in any order
		tl.Visitors = append(tl.Visitors, admitted("", 0, float64(i)))
	}
	tl.Visitors = append(tl.Visitors, Visitor{Arrival: at(0), Abandoned: at(100)}) // not admitted: no wait
	res := Report(tl, Limits{TotalActiveUsers: 100, SessionDuration: time.Second})
	approx(t, "WaitP50S", res.WaitP50S, 5)
	approx(t, "WaitP95S", res.WaitP95S, 10)
	approx(t, "WaitP99S", res.WaitP99S, 10)

	for _, c := range []struct {
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{nil, 50, 0},
		{[]time.Duration{7}, 99, 7},
		{[]time.Duration{3, 1, 2}, 50, 2},
		{[]time.Duration{1, 2, 3, 4}, 50, 2},
		{[]time.Duration{1, 2, 3, 4}, 51, 3},
		{[]time.Duration{1, 2, 3, 4}, 0, 1},
		{[]time.Duration{1, 2, 3, 4}, 100, 4},
	} {
		if got := percentile(c.ds, c.p); got != c.want {
			t.Errorf("percentile(%v, %v) = %v, want %v", c.ds, c.p, got, c.want)
		}
	}
}

func TestETAError(t *testing.T) {
	known := func(sec, eta float64) CheckIn {
		return CheckIn{At: at(sec), ETAKnown: true, ETA: time.Duration(eta * float64(time.Second)), Refresh: 2 * time.Second}
	}
	unknown := func(sec float64) CheckIn { return CheckIn{At: at(sec), Refresh: 2 * time.Second} }
	ranged := func(c CheckIn, low, high float64) CheckIn {
		c.ETALow, c.ETAHigh = time.Duration(low*float64(time.Second)), time.Duration(high*float64(time.Second))
		return c
	}
	lim := Limits{TotalActiveUsers: 10, SessionDuration: time.Minute, RefreshInterval: 2 * time.Second}
	tl := &Timeline{Visitors: []Visitor{
		// The first waiting answer counts, not a later one: announced 60 s
		// at 5, admitted 40 s later: off by 20 s, 50 %.
		{Arrival: at(5), CheckIns: []CheckIn{known(5, 60), known(6, 39)}, Admitted: at(45)},
		// Announced 100 s at 0, admitted at 90: off by 10 s, 11.1 %.
		{Arrival: at(0), CheckIns: []CheckIn{known(0, 100)}, Admitted: at(90)},
		// Announced 10 s at 0, admitted at 20: off by 10 s, 50 %.
		{Arrival: at(0), CheckIns: []CheckIn{known(0, 10)}, Admitted: at(20)},
		// Waited less than two refresh intervals: not counted.
		{Arrival: at(0), CheckIns: []CheckIn{known(0, 60)}, Admitted: at(3.9)},
		// Never admitted: not counted.
		{Arrival: at(0), CheckIns: []CheckIn{known(0, 1)}, Abandoned: at(200)},
		// No wait announced on the first answer: counted apart.
		{Arrival: at(0), CheckIns: []CheckIn{unknown(0), known(1, 10)}, Admitted: at(30)},
		// Admitted at once: never waited.
		{Arrival: at(0), Admitted: at(0)},
	}}
	res := Report(tl, lim)
	if res.ETAVisitors != 3 || res.ETAUnknown != 1 {
		t.Fatalf("ETAVisitors %d, ETAUnknown %d, want 3 and 1", res.ETAVisitors, res.ETAUnknown)
	}
	approx(t, "ETAErrorMedianS", res.ETAErrorMedianS, 10)
	approx(t, "ETAErrorP90S", res.ETAErrorP90S, 20)
	approx(t, "ETAErrorMedianPct", res.ETAErrorMedianPct, 50)
	approx(t, "ETAErrorP90Pct", res.ETAErrorP90Pct, 50)
	if res.WaitRangeCoverage != nil {
		t.Errorf("coverage %v without any range", *res.WaitRangeCoverage)
	}

	// A random room's ranges: 2 of the 3 actual waits fall inside.
	tl.Visitors[0].CheckIns[0] = ranged(tl.Visitors[0].CheckIns[0], 30, 50)  // actual 40: in
	tl.Visitors[1].CheckIns[0] = ranged(tl.Visitors[1].CheckIns[0], 90, 120) // actual 90: in (the ends count)
	tl.Visitors[2].CheckIns[0] = ranged(tl.Visitors[2].CheckIns[0], 4, 10)   // actual 20: out
	res = Report(tl, lim)
	if c := res.WaitRangeCoverage; c == nil || math.Abs(*c-2.0/3) > 1e-9 {
		t.Errorf("coverage %v, want 2/3", c)
	}
}

func TestRequeuedWhileBrowsing(t *testing.T) {
	lim := Limits{TotalActiveUsers: 10, SessionDuration: 10 * time.Second}
	in := admitted("in", 0, 0, 0, 5)
	in.RequeuedAt, in.Requeued, in.Left = at(8), 1, at(8) // session to 15: a defect
	late := admitted("late", 0, 0, 0)
	late.RequeuedAt, late.Requeued, late.Left = at(20), 1, at(20) // session ended at 10
	res := Report(&Timeline{Visitors: []Visitor{in, late}}, lim)
	if res.RequeuedWhileBrowsing != 1 {
		t.Errorf("RequeuedWhileBrowsing = %d, want 1", res.RequeuedWhileBrowsing)
	}
	// The requeue ends the session for the active count.
	if ix := newIndex(&Timeline{Visitors: []Visitor{in}}, lim); ix.active(at(8).UnixNano()) != 0 {
		t.Error("session still counted after the requeue")
	}
}

func TestReportCounts(t *testing.T) {
	tl := &Timeline{Start: at(0), End: at(42.5), Visitors: []Visitor{
		{ID: "a", Arrival: at(0), Admitted: at(1), Left: at(30), Errors: []RequestError{{Kind: ErrTimeout}}},
		{ID: "b", Arrival: at(0), Abandoned: at(9), Left: at(9)},
		{ID: "c", Arrival: at(0), GaveUp: true, Left: at(3), Errors: []RequestError{
			{Kind: ErrStatus, Status: 502}, {Kind: ErrStatus, Status: 502}, {Kind: ErrTransport},
		}},
		{ID: "d", Arrival: at(1)},
		{ID: "e"},
	}}
	res := Report(tl, Limits{TotalActiveUsers: 10, NewUsersPerMinute: 10, SessionDuration: time.Minute})
	if res.Visitors != 5 || res.Admitted != 1 || res.Abandoned != 1 || res.GaveUp != 1 || res.Unfinished != 2 || res.Errors != 4 {
		t.Errorf("counts = %+v", res)
	}
	want := map[string]int{"timeout": 1, "status_502": 2, "transport": 1}
	if len(res.ErrorCounts) != len(want) {
		t.Errorf("ErrorCounts = %v, want %v", res.ErrorCounts, want)
	}
	for k, n := range want {
		if res.ErrorCounts[k] != n {
			t.Errorf("ErrorCounts[%s] = %d, want %d", k, res.ErrorCounts[k], n)
		}
	}
	if got := strings.Join(ErrorKinds(res.ErrorCounts), ","); got != "status_502,timeout,transport" {
		t.Errorf("ErrorKinds = %s", got)
	}
	approx(t, "DurationS", res.DurationS, 42.5)

	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		"max_active", "max_active_ratio", "max_rate", "max_rate_ratio", "utilization", "fifo_inversions",
		"wait_p50_s", "wait_p95_s", "wait_p99_s", "eta_error_median_s", "eta_error_p90_s",
		"requeued_while_browsing", "admitted", "abandoned", "visitors", "errors", "duration_s",
		"wait_p90_s", "eta_error_median_pct", "queue_peak", "queue_peak_at_s", "queue_drained", "queue_drained_s", "warnings",
	} {
		if !strings.Contains(string(b), `"`+key+`":`) {
			t.Errorf("JSON has no %q: %s", key, b)
		}
	}
}

func TestSeries(t *testing.T) {
	tl := &Timeline{Start: at(0), End: at(3), Visitors: []Visitor{
		admitted("x", 0, 0, 0),
		{ID: "w", Arrival: at(0.5), CheckIns: checkIns(0.5), Admitted: at(2), Requests: ats(2)},
	}}
	got := Series(tl, Limits{TotalActiveUsers: 5, SessionDuration: 2 * time.Second}, time.Second)
	want := []Sample{
		{T: 0, Active: 1, Waiting: 0, AdmittedPerMinute: 1},
		{T: time.Second, Active: 1, Waiting: 1, AdmittedPerMinute: 1},
		{T: 2 * time.Second, Active: 1, Waiting: 0, AdmittedPerMinute: 2}, // x's session ended at 2
		{T: 3 * time.Second, Active: 1, Waiting: 0, AdmittedPerMinute: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("Series = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
