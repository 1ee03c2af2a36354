package storetest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// testHealth: the nodes' counts of one second add up, bucket by bucket;
// rooms and seconds are apart; an unknown second is zero.
func testHealth(t *testing.T, s usher.Store) {
	ctx := context.Background()
	sec := T0.Unix()
	if h, err := s.Health(ctx, "r", sec); err != nil || h.Count != 0 || h.Errors != 0 || len(h.Buckets) != 0 {
		t.Fatalf("empty second: %+v, %v", h, err)
	}
	a := usher.Health{Count: 10, Errors: 1, Buckets: make([]int64, usher.HealthBuckets)}
	a.Buckets[3], a.Buckets[100] = 4, 6
	b := usher.Health{Count: 5, Errors: 2, Buckets: []int64{0, 0, 0, 5}}
	for _, h := range []usher.Health{a, b} {
		if err := s.AddHealth(ctx, "r", sec, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddHealth(ctx, "r", sec+1, usher.Health{Count: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHealth(ctx, "other", sec, usher.Health{Count: 100}); err != nil {
		t.Fatal(err)
	}
	h, err := s.Health(ctx, "r", sec)
	if err != nil {
		t.Fatal(err)
	}
	if h.Count != 15 || h.Errors != 3 {
		t.Errorf("summed: count %d errors %d, want 15 and 3", h.Count, h.Errors)
	}
	want := make([]int64, 101)
	want[3], want[100] = 9, 6
	got := h.Buckets
	for len(got) > 0 && got[len(got)-1] == 0 {
		got = got[:len(got)-1]
	}
	if !slices.Equal(got, want) {
		t.Errorf("buckets %v, want 9 in 3 and 6 in 100", got)
	}
	if h, _ := s.Health(ctx, "r", sec+1); h.Count != 7 {
		t.Errorf("next second: count %d, want 7", h.Count)
	}
	if h, _ := s.Health(ctx, "other", sec); h.Count != 100 {
		t.Errorf("other room: count %d, want 100", h.Count)
	}
}

// testGovernor: the first writer of a version wins; a node that swaps from
// a version that moved on gets the figure in force and changes nothing.
func testGovernor(t *testing.T, s usher.Store) {
	ctx := context.Background()
	if g, err := s.Governor(ctx, "r"); err != nil || g.Version != 0 {
		t.Fatalf("no figure yet: %+v, %v", g, err)
	}
	at := T0.Add(time.Second)
	g, err := s.SwapGovernor(ctx, "r", 0, usher.GovernorFigure{Rate: 300, Concurrency: 500, At: at, Reason: "latency"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Version != 1 || g.Rate != 300 || g.Concurrency != 500 || !g.At.Equal(at) || g.Reason != "latency" {
		t.Fatalf("first swap: %+v", g)
	}
	lost, err := s.SwapGovernor(ctx, "r", 0, usher.GovernorFigure{Rate: 1, Concurrency: 1, At: at, Reason: "errors"})
	if err != nil {
		t.Fatal(err)
	}
	if lost != g {
		t.Fatalf("a stale swap got %+v, want the figure in force %+v", lost, g)
	}
	if cur, _ := s.Governor(ctx, "r"); cur != g {
		t.Fatalf("Governor = %+v, want %+v", cur, g)
	}
	if other, _ := s.Governor(ctx, "other"); other.Version != 0 {
		t.Fatalf("another room's figure: %+v", other)
	}
	// Many nodes swapping from one version: exactly one wins.
	var wg sync.WaitGroup
	wins := make(chan int, 16)
	for i := range 16 {
		wg.Go(func() {
			got, err := s.SwapGovernor(ctx, "r", 1, usher.GovernorFigure{Rate: 100 + i, At: at, Reason: "recovered"})
			if err == nil && got.Rate == 100+i && got.Version == 2 {
				wins <- i
			}
		})
	}
	wg.Wait()
	close(wins)
	if n := len(wins); n != 1 {
		t.Fatalf("%d swaps from version 1 won, want exactly 1", n)
	}
}
