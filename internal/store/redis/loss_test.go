package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
	"github.com/usherhq/usher/internal/store/storetest"
)

// session is an admitted visitor as the test tracks it: the cell its
// ticket names and when its session ends.
type session struct {
	id   [8]byte
	cell usher.Cell
	end  time.Time
	renw bool // renews while it runs
}

// TestDataLossHoldsTheLimit flushes Redis while five sessions run in a room
// of five, then keeps offering new visitors every second: the running
// sessions plus the newly admitted never exceed five, two sessions renew
// and are counted again, and once the hold is over the room admits again.
func TestDataLossHoldsTheLimit(t *testing.T) {
	for _, fresh := range []bool{false, true} {
		name := "same store"
		if fresh {
			name = "another store"
		}
		t.Run(name, func(t *testing.T) {
			srv := redistest.StartServer(t)
			opts := redis.Options{Addrs: []string{srv.Addr()}}
			s := mustOpen(t, opts)
			ctx := context.Background()
			const total, sd = 5, 120 * time.Second
			t0 := storetest.T0
			var running []*session
			for i := range total {
				o := op(t0, total, 100, sd)
				if res := mustAdmit(t, s, "r", o); !res.Admitted {
					t.Fatalf("visitor %d before the loss not admitted: %+v", i, res)
				}
				running = append(running, &session{
					id:   o.Visitor,
					cell: usher.Cell{Exp: o.ActiveExp, At: t0},
					end:  t0.Add(sd), renw: i < 2,
				})
			}
			srv.Do("FLUSHALL")
			loss := t0.Add(10 * time.Second)
			if fresh {
				// Another node, that never saw the room: it learns of the
				// loss from the first ticket that shows it.
				s = mustOpen(t, opts)
			}
			var firstAdmit time.Time
			for now := loss; now.Before(loss.Add(200 * time.Second)); now = now.Add(time.Second) {
				// The renewing sessions are counted again every 10 s.
				for _, r := range running {
					if r.renw && r.end.After(now) && now.Sub(r.cell.At) >= 10*time.Second {
						to := usher.CeilSecond(now.Add(sd)).Unix()
						if _, err := s.Renew(ctx, "r", usher.RenewOp{Now: now, Visitor: r.id, From: r.cell, To: to, Counted: now, Keep: to}); err != nil {
							t.Fatal(err)
						}
						r.cell, r.end = usher.Cell{Exp: to, At: now}, now.Add(sd)
					}
				}
				o := op(now, total, 100, sd)
				o.WaitExp = 0 // who is not let in leaves
				res := mustAdmit(t, s, "r", o)
				if res.Admitted {
					if firstAdmit.IsZero() {
						firstAdmit = now
					}
					running = append(running, &session{end: now.Add(sd)})
				}
				live := 0
				for _, r := range running {
					if r.end.After(now) {
						live++
					}
				}
				if live > total {
					t.Fatalf("at loss+%v: %d sessions run in a room of %d (last: %+v)", now.Sub(loss), live, total, res)
				}
			}
			// The hold ends session duration + 1 s after the loss was
			// known; after it, the room admits again.
			if firstAdmit.IsZero() {
				t.Fatal("the room never admitted again after the loss")
			}
			if d := firstAdmit.Sub(loss); d < sd || d > sd+5*time.Second {
				t.Errorf("first admission %v after the loss, want about %v", d, sd+time.Second)
			}
		})
	}
}

// TestDataLossHoldsTheRate: after a loss the rate slots stay at zero for
// 61 s from the first call that finds it, even when sessions are short.
func TestDataLossHoldsTheRate(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}})
	const sd = 5 * time.Second
	t0 := storetest.T0
	for range 3 {
		mustAdmit(t, s, "r", op(t0, 100, 3, sd))
	}
	srv.Do("FLUSHALL")
	loss := t0.Add(time.Second)
	for _, tc := range []struct {
		after time.Duration
		want  bool
	}{{0, false}, {60 * time.Second, false}, {61 * time.Second, true}} {
		o := op(loss.Add(tc.after), 100, 3, sd)
		o.WaitExp = 0
		res := mustAdmit(t, s, "r", o)
		if res.Admitted != tc.want {
			t.Fatalf("%v after the loss: %+v, want admitted %v", tc.after, res, tc.want)
		}
		if !tc.want && res.Slots != 0 {
			t.Fatalf("%v after the loss: slots %d, want 0 while held", tc.after, res.Slots)
		}
	}
}

// TestPartialLossIsALoss: a room missing one of its keys (an eviction) is
// created again and held, even by a store that never saw it.
func TestPartialLossIsALoss(t *testing.T) {
	srv := redistest.StartServer(t)
	opts := redis.Options{Addrs: []string{srv.Addr()}}
	mustAdmit(t, mustOpen(t, opts), "r", op(storetest.T0, 1, 100, time.Minute))
	srv.Do("DEL", "{usher:r}:a")
	res := mustAdmit(t, mustOpen(t, opts), "r", op(storetest.T0.Add(time.Second), 1, 100, time.Minute))
	if res.Admitted || res.Slots != 0 {
		t.Fatalf("after a partial loss: %+v, want held full", res)
	}
}

// TestIdleExpiryIsNoLoss: a room whose keys expired after the horizon is
// new again, not recovering.
func TestIdleExpiryIsNoLoss(t *testing.T) {
	srv := redistest.StartServer(t)
	s := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, Horizon: 300 * time.Millisecond})
	t0 := storetest.T0
	o := op(t0, 1, 100, time.Minute)
	o.ActiveExp = t0.Unix() + 1
	mustAdmit(t, s, "r", o)
	deadline := time.Now().Add(10 * time.Second)
	for srv.Do("EXISTS", "{usher:r}:m") != "0" {
		if time.Now().After(deadline) {
			t.Fatal("the room's keys did not expire")
		}
		time.Sleep(50 * time.Millisecond)
	}
	later := t0.Add(time.Hour)
	if res := mustAdmit(t, s, "r", op(later, 1, 100, time.Minute)); !res.Admitted {
		t.Fatalf("after idle expiry: %+v, want admitted", res)
	}
}
