package storetest

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// analyticsNow is a whole minute near the real time: stores drop points
// past their retention by their own clock.
func analyticsNow() time.Time { return time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour) }

// testAnalyticsMerge: deltas add up (Add) and keep the largest (Max),
// into their minute and into the hour that holds it; reads return the
// points of the range, oldest first.
func testAnalyticsMerge(t *testing.T, s usher.Store) {
	ctx := context.Background()
	h := analyticsNow()
	m0, m1 := h.Add(5*time.Minute), h.Add(6*time.Minute)
	deltas := [][]usher.AnalyticsDelta{
		{{Minute: m0, Add: map[string]int64{"arr": 3, "q12": 2}, Max: map[string]int64{"pw": 40}}},
		{{Minute: m0, Add: map[string]int64{"arr": 4, "adm": 1}, Max: map[string]int64{"pw": 25, "pa": 7}}},
		{{Minute: m1, Add: map[string]int64{"arr": 1}, Max: map[string]int64{"pw": 50}},
			{Minute: m0, Add: map[string]int64{"q12": 1}}},
	}
	for _, d := range deltas {
		if err := s.AddAnalytics(ctx, "sale", d); err != nil {
			t.Fatalf("AddAnalytics: %v", err)
		}
	}
	mins, err := s.ReadAnalytics(ctx, "sale", time.Minute, h, h.Add(time.Hour))
	if err != nil {
		t.Fatalf("ReadAnalytics minute: %v", err)
	}
	want := []usher.AnalyticsPoint{
		{Start: m0, Add: map[string]int64{"arr": 7, "adm": 1, "q12": 3}, Max: map[string]int64{"pw": 40, "pa": 7}},
		{Start: m1, Add: map[string]int64{"arr": 1}, Max: map[string]int64{"pw": 50}},
	}
	samePoints(t, "minutes", mins, want)
	hours, err := s.ReadAnalytics(ctx, "sale", time.Hour, h, h.Add(time.Hour))
	if err != nil {
		t.Fatalf("ReadAnalytics hour: %v", err)
	}
	samePoints(t, "hours", hours, []usher.AnalyticsPoint{
		{Start: h, Add: map[string]int64{"arr": 8, "adm": 1, "q12": 3}, Max: map[string]int64{"pw": 50, "pa": 7}},
	})
	// The range is half-open, and a from within a step starts at the next.
	got, err := s.ReadAnalytics(ctx, "sale", time.Minute, m0.Add(time.Second), m1.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	samePoints(t, "from inside m0", got, want[1:])
	got, err = s.ReadAnalytics(ctx, "sale", time.Minute, m0, m1)
	if err != nil {
		t.Fatal(err)
	}
	samePoints(t, "to at m1", got, want[:1])
	// Other rooms and empty ranges hold nothing.
	if got, err := s.ReadAnalytics(ctx, "other", time.Minute, h, h.Add(time.Hour)); err != nil || len(got) != 0 {
		t.Errorf("other room: %v, %v; want none", got, err)
	}
	if got, err := s.ReadAnalytics(ctx, "sale", time.Minute, h.Add(-time.Hour), h); err != nil || len(got) != 0 {
		t.Errorf("empty range: %v, %v; want none", got, err)
	}
}

// testAnalyticsRefusesBadInput: a minute that is not whole, a bad field
// name, a negative count, too many fields or a bad step are refused with
// EInvalid and change nothing.
func testAnalyticsRefusesBadInput(t *testing.T, s usher.Store) {
	ctx := context.Background()
	m := analyticsNow()
	if err := s.AddAnalytics(ctx, "sale", []usher.AnalyticsDelta{{Minute: m, Add: map[string]int64{"arr": 1}}}); err != nil {
		t.Fatal(err)
	}
	big := map[string]int64{}
	for i := range usher.AnalyticsMaxFields + 1 {
		big["f"+itoa(i)] = 1
	}
	// Two deltas of one call each below the bound, that together exceed it.
	half1, half2 := map[string]int64{}, map[string]int64{}
	for i := range usher.AnalyticsMaxFields/2 + 1 {
		half1["g"+itoa(i)] = 1
		half2["k"+itoa(i)] = 1
	}
	for name, d := range map[string][]usher.AnalyticsDelta{
		"second":     {{Minute: m.Add(time.Second), Add: map[string]int64{"arr": 1}}},
		"zero":       {{Add: map[string]int64{"arr": 1}}},
		"name":       {{Minute: m, Add: map[string]int64{"a:b": 1}}},
		"empty name": {{Minute: m, Max: map[string]int64{"": 1}}},
		"negative":   {{Minute: m, Add: map[string]int64{"arr": -1}}},
		"too many":   {{Minute: m, Add: big}},
		"together":   {{Minute: m, Add: half1}, {Minute: m, Add: half2}},
		"good first": {{Minute: m, Add: map[string]int64{"arr": 5}}, {Minute: m.Add(time.Second)}},
	} {
		err := s.AddAnalytics(ctx, "sale", d)
		if usher.ErrorCode(err) != usher.EInvalid {
			t.Errorf("%s: err = %v, want EInvalid", name, err)
		}
	}
	got, err := s.ReadAnalytics(ctx, "sale", time.Minute, m, m.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	samePoints(t, "after refusals", got, []usher.AnalyticsPoint{{Start: m, Add: map[string]int64{"arr": 1}, Max: map[string]int64{}}})
	for _, step := range []time.Duration{0, time.Second, 2 * time.Minute, 24 * time.Hour} {
		if _, err := s.ReadAnalytics(ctx, "sale", step, m, m.Add(time.Hour)); usher.ErrorCode(err) != usher.EInvalid {
			t.Errorf("step %v: err = %v, want EInvalid", step, err)
		}
	}
}

// testAnalyticsParallelAddsMerge: nodes flushing at once lose no count.
func testAnalyticsParallelAddsMerge(t *testing.T, s usher.Store) {
	ctx := context.Background()
	m := analyticsNow().Add(time.Minute)
	var wg sync.WaitGroup
	for n := range 8 {
		wg.Go(func() {
			for i := range 20 {
				d := []usher.AnalyticsDelta{{Minute: m, Add: map[string]int64{"arr": 1}, Max: map[string]int64{"pw": int64(n*100 + i)}}}
				if err := s.AddAnalytics(ctx, "sale", d); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.ReadAnalytics(ctx, "sale", time.Minute, m, m.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	samePoints(t, "parallel", got, []usher.AnalyticsPoint{{Start: m, Add: map[string]int64{"arr": 160}, Max: map[string]int64{"pw": 719}}})
}

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for ; i > 0; i /= 10 {
		b = append([]byte{byte('0' + i%10)}, b...)
	}
	return string(b)
}

func samePoints(t *testing.T, what string, got, want []usher.AnalyticsPoint) {
	t.Helper()
	eq := func(a, b map[string]int64) bool { return len(a) == len(b) && (len(a) == 0 || maps.Equal(a, b)) }
	ok := len(got) == len(want)
	for i := 0; ok && i < len(got); i++ {
		ok = got[i].Start.Equal(want[i].Start) && eq(got[i].Add, want[i].Add) && eq(got[i].Max, want[i].Max)
	}
	if !ok {
		t.Errorf("%s: points\n got %v\nwant %v", what, got, want)
	}
}
