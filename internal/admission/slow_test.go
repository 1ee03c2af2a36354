package admission

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/usherhq/usher"
)

// slowStore answers every decision's call delay after the store applied
// it: a store whose replies travel slowly (a latency on every reply, below
// the caller's timeout).
type slowStore struct {
	usher.Store
	delay time.Duration
}

func (s *slowStore) Admit(ctx context.Context, room string, op usher.AdmitOp) (usher.AdmitResult, error) {
	res, err := s.Store.Admit(ctx, room, op)
	time.Sleep(s.delay)
	return res, err
}

func (s *slowStore) Renew(ctx context.Context, room string, op usher.RenewOp) (usher.RenewResult, error) {
	res, err := s.Store.Renew(ctx, room, op)
	time.Sleep(s.delay)
	return res, err
}

func (s *slowStore) Peek(ctx context.Context, room string, now time.Time, bucket int64) (int64, usher.RoomStats, error) {
	ahead, st, err := s.Store.Peek(ctx, room, now, bucket)
	time.Sleep(s.delay)
	return ahead, st, err
}

// slowRun is what a flash crowd through a slow store came to.
type slowRun struct {
	lapsedIns, lapsed int64
	admitted          int
	// inversions counts visitors told to wait after a visitor of a later
	// arrival bucket had been admitted (each once), as usher bench counts
	// them.
	inversions int
}

// slowEvent is one decision of a run: when, for which visitor and arrival
// bucket, and whether it admitted.
type slowEvent struct {
	at       time.Time
	visitor  int
	bucket   int64
	admitted bool
}

// runSlow sends 100 visitors in 10 s to a room of 20 places and 60 a
// minute (refresh_interval 2s) over a store whose answers come delay
// after each call, on simulated time. Every visitor's page comes back
// 0, page/2 or page after it was told to (its load time: one visitor in
// three each), within the grace; nobody
// gives up; the admitted browse with a request every 2 s for 6 s.
func runSlow(t *testing.T, delay, page time.Duration) slowRun {
	t.Helper()
	var out slowRun
	synctest.Test(t, func(t *testing.T) {
		st := memStore(t)
		e := New(&slowStore{Store: st, delay: delay}, Options{Rand: newRand(23)})
		room := simRoom()
		var mu sync.Mutex
		var events []slowEvent
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 100 * time.Millisecond)
				var tk *usher.Ticket
				for {
					now := time.Now()
					d, err := e.Decide(context.Background(), &room, usher.Visit{Ticket: tk, Now: now})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Outcome == usher.Wait || d.NewlyAdmitted {
						mu.Lock()
						events = append(events, slowEvent{at: now, visitor: i, bucket: d.Ticket.Bucket(), admitted: d.NewlyAdmitted})
						mu.Unlock()
					}
					if d.Outcome == usher.Admit {
						tk = &d.Ticket
						for range 3 {
							time.Sleep(2 * time.Second)
							if d, err = e.Decide(context.Background(), &room, usher.Visit{Ticket: tk, Now: time.Now()}); err != nil {
								t.Error(err)
								return
							}
							tk = &d.Ticket
						}
						return
					}
					tk = &d.Ticket
					time.Sleep(d.RefreshAfter + page*time.Duration(i%3)/2)
				}
			})
		}
		wg.Wait()
		n, err := st.Lapsed(context.Background(), room.ID, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		out.lapsed, out.lapsedIns = n, e.LapsedCheckIns()
		inverted := map[int]bool{}
		for _, a := range events {
			if a.admitted {
				out.admitted++
				continue
			}
			for _, b := range events {
				if b.admitted && b.bucket > a.bucket && b.at.Before(a.at) {
					inverted[a.visitor] = true
				}
			}
		}
		out.inversions = len(inverted)
	})
	return out
}

// TestSlowStoreCostsTimeNotOrder: answers that come 1 s after the store
// applied each call (below any sane timeout) cost the waiters time, never
// their place: a page that comes back within the grace of what it was
// told still finds its waiting count there, so no count lapses and the
// admissions follow the arrival order. Before the page was told its
// refresh from the decision rather than the answer, a page taking a
// second to come back lapsed (the grace is a second and a quarter of the
// interval, and the answer took one of them).
func TestSlowStoreCostsTimeNotOrder(t *testing.T) {
	for _, c := range []struct {
		name        string
		delay, page time.Duration
	}{
		{"fast store", 0, time.Second},
		{"replies 1 s late", time.Second, time.Second},
		{"replies 1.4 s late", 1400 * time.Millisecond, 500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runSlow(t, c.delay, c.page)
			t.Logf("%d admitted, %d lapsed check-ins, %d counts lapsed, %d inversions", r.admitted, r.lapsedIns, r.lapsed, r.inversions)
			if r.admitted != 100 {
				t.Errorf("%d of 100 admitted", r.admitted)
			}
			if r.lapsedIns != 0 || r.lapsed != 0 {
				t.Errorf("%d check-ins after their count lapsed, %d counts lapsed: want none", r.lapsedIns, r.lapsed)
			}
			if r.inversions != 0 {
				t.Errorf("%d visitors told to wait after a later arrival went in", r.inversions)
			}
		})
	}
}
