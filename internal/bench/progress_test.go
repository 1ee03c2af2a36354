package bench

import (
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestProgressString(t *testing.T) {
	p := Progress{Elapsed: 42 * time.Second, Visitors: 5000, Arrived: 3000, Waiting: 2100, Admitted: 900, Left: 120}
	if got, want := p.String(), "0:42  3,000/5,000 arrived  2,100 waiting  900 admitted  120 left"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// TestRunProgress: the run reports while it lasts and once at the end,
// with the counts of its timeline.
func TestRunProgress(t *testing.T) {
	t.Parallel()
	origin := NewOrigin("shop")
	srv := httptest.NewServer(newFakeGate(origin, 2, 1500*time.Millisecond))
	defer srv.Close()
	var mu sync.Mutex
	var got []Progress
	tl, err := Run(t.Context(), Config{
		Target:        srv.URL + "/",
		Arrivals:      mustArrivals(t, "steady:6@300ms"),
		Model:         VisitorModel{Browse: Fixed(500 * time.Millisecond)},
		Horizon:       10 * time.Second,
		ProgressEvery: 200 * time.Millisecond,
		Progress: func(p Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("%d progress reports, want several", len(got))
	}
	sawWaiting := false
	for i, p := range got {
		sawWaiting = sawWaiting || p.Waiting > 0
		if p.Done != (i == len(got)-1) || p.Visitors != 6 || (i > 0 && p.Elapsed < got[i-1].Elapsed) {
			t.Errorf("report %d: %+v", i, p)
		}
	}
	last, res := got[len(got)-1], Report(tl, Limits{TotalActiveUsers: 2, SessionDuration: time.Second})
	if !sawWaiting || last.Arrived != 6 || last.Admitted != res.Admitted || last.Left != 6 || last.Waiting != 0 {
		t.Errorf("last report %+v (saw waiting %v), report %+v", last, sawWaiting, res)
	}
}
