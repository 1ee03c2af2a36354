package guard

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a settable test clock.
type clock struct{ now atomic.Int64 }

func newClock(t time.Time) *clock { c := &clock{}; c.set(t); return c }
func (c *clock) set(t time.Time)  { c.now.Store(t.UnixNano()) }
func (c *clock) add(d time.Duration) {
	c.now.Add(int64(d))
}
func (c *clock) Now() time.Time { return time.Unix(0, c.now.Load()) }

func id(i int) [16]byte {
	var b [16]byte
	b[0], b[1], b[15] = byte(i), byte(i>>8), 0xee
	return b
}

func TestMemorySpent(t *testing.T) {
	ctx := t.Context()
	clk := newClock(t0)
	s := NewMemorySpent(3)
	s.Now = clk.Now
	until := t0.Add(time.Minute)
	steps := []struct {
		name  string
		room  string
		id    [16]byte
		until time.Time
		fresh bool
		err   error
	}{
		{"first use", "a", id(1), until, true, nil},
		{"replay", "a", id(1), until, false, nil},
		{"replay with a later until", "a", id(1), until.Add(time.Hour), false, nil},
		{"same id in another room", "b", id(1), until, true, nil},
		{"another id", "a", id(2), until.Add(time.Second), true, nil},
		{"full of unexpired entries", "a", id(3), until, false, ErrFull},
		{"full: replay still refused", "a", id(2), until, false, nil},
		{"until already passed", "a", id(4), t0, false, nil},
	}
	for _, st := range steps {
		fresh, err := s.Spend(ctx, st.room, st.id, st.until)
		if fresh != st.fresh || !errors.Is(err, st.err) {
			t.Errorf("%s: fresh %v, %v; want %v, %v", st.name, fresh, err, st.fresh, st.err)
		}
	}
	// At until, the first two entries are forgotten: the id is fresh again
	// (Verify refuses its challenge by then) and there is room.
	clk.set(until)
	if fresh, err := s.Spend(ctx, "a", id(3), until.Add(time.Minute)); !fresh || err != nil {
		t.Errorf("after expiry, new id: %v, %v", fresh, err)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2 (id 2 and id 3)", s.Len())
	}
	if fresh, _ := s.Spend(ctx, "a", id(2), until.Add(time.Minute)); fresh {
		t.Error("id 2 forgotten before its until")
	}
	clk.add(time.Second)
	if fresh, _ := s.Spend(ctx, "a", id(2), until.Add(time.Minute)); !fresh {
		t.Error("id 2 kept past its until")
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if fresh, err := s.Spend(cancelled, "a", id(9), until.Add(time.Hour)); fresh || err == nil {
		t.Errorf("cancelled context: %v, %v", fresh, err)
	}
}

// TestMemorySpentBounded: a flood of fresh ids never grows the set past its
// capacity, and once the flood's entries expire the set takes new ones.
func TestMemorySpentBounded(t *testing.T) {
	clk := newClock(t0)
	s := NewMemorySpent(1000)
	s.Now = clk.Now
	refused := 0
	for i := range 5000 {
		clk.add(time.Millisecond)
		fresh, err := s.Spend(t.Context(), "a", id(i), clk.Now().Add(time.Second))
		if errors.Is(err, ErrFull) {
			refused++
		} else if !fresh || err != nil {
			t.Fatalf("id %d: %v, %v", i, fresh, err)
		}
		if s.Len() > 1000 {
			t.Fatalf("Len %d over capacity", s.Len())
		}
	}
	// One second of entries is alive at any time: 1000 a second fills it
	// exactly, so nothing is refused.
	if refused != 0 {
		t.Errorf("refused %d", refused)
	}
	for i := range 2000 { // twice as fast: about half refused
		clk.add(time.Millisecond / 2)
		if _, err := s.Spend(t.Context(), "a", id(10000+i), clk.Now().Add(time.Second)); errors.Is(err, ErrFull) {
			refused++
		}
	}
	if refused < 900 || refused > 1100 || s.Len() > 1000 {
		t.Errorf("refused %d, Len %d", refused, s.Len())
	}
	clk.add(2 * time.Second)
	if fresh, err := s.Spend(t.Context(), "a", id(1), clk.Now().Add(time.Second)); !fresh || err != nil || s.Len() != 1 {
		t.Errorf("after the flood: %v, %v, Len %d", fresh, err, s.Len())
	}
}

func TestMemorySpentConcurrent(t *testing.T) {
	s := NewMemorySpent(0)
	until := time.Now().Add(time.Hour)
	var wins atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 500 {
				if fresh, err := s.Spend(t.Context(), "a", id(i), until); err != nil {
					t.Error(err)
				} else if fresh {
					wins.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() != 500 {
		t.Errorf("%d fresh spends of 500 ids", wins.Load())
	}
}

// TestMemorySpentSize measures the memory an entry holds.
func TestMemorySpentSize(t *testing.T) {
	const n = 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := NewMemorySpent(n)
	until := time.Now().Add(time.Hour)
	room := "sale"
	for i := range n {
		var b [16]byte
		b[0], b[1], b[2] = byte(i), byte(i>>8), byte(i>>16)
		if _, err := s.Spend(t.Context(), room, b, until); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("MemorySpent: %.0f bytes per entry (%d entries)", per, s.Len())
	if per > 200 {
		t.Errorf("%.0f bytes per entry", per)
	}
	runtime.KeepAlive(s)
}
