// Package storetest is the conformance suite every usher.Store runs: the
// embedded store in its own tests, shared stores against real servers.
package storetest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// Opener returns a fresh, empty store for one test; the suite closes it.
type Opener func(t *testing.T) usher.Store

// T0 is the suite's start time, a whole second.
var T0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// Run runs the conformance suite against the stores open returns.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s usher.Store)
	}{
		{"EmptyRoomAdmits", testEmptyRoomAdmits},
		{"ConcurrencyLimit", testConcurrencyLimit},
		{"RateLimit", testRateLimit},
		{"ActiveCellsExpire", testActiveCellsExpire},
		{"WaitersAheadByBucket", testWaitersAheadByBucket},
		{"WaitingMoveCountsOnce", testWaitingMoveCountsOnce},
		{"AbandonedWaitersExpire", testAbandonedWaitersExpire},
		{"TouchMovesActivity", testTouchMovesActivity},
		{"NoAdmitAndForce", testNoAdmitAndForce},
		{"RoomsAreSeparate", testRoomsAreSeparate},
		{"Keys", testKeys},
		{"ParallelAdmitsHoldTheLimit", testParallelAdmits},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

// op returns an AdmitOp for a new visitor arriving at now.
func op(now time.Time, total, perMinute int) usher.AdmitOp {
	return usher.AdmitOp{
		Now:               now,
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
		Bucket:            now.Unix(),
		WaitExp:           now.Unix() + 5,
		ActiveExp:         now.Unix() + 30,
	}
}

func mustAdmit(t *testing.T, s usher.Store, room string, o usher.AdmitOp) usher.AdmitResult {
	t.Helper()
	res, err := s.Admit(context.Background(), room, o)
	if err != nil {
		t.Fatalf("Admit: %v", err)
	}
	return res
}

func mustStats(t *testing.T, s usher.Store, room string, now time.Time) usher.RoomStats {
	t.Helper()
	st, err := s.Stats(context.Background(), room, now)
	if err != nil {
		t.Fatalf("Stats: %v", err)
	}
	return st
}

func testEmptyRoomAdmits(t *testing.T, s usher.Store) {
	if st := mustStats(t, s, "never-seen", T0); st != (usher.RoomStats{}) {
		t.Fatalf("unseen room stats = %+v, want zero", st)
	}
	res := mustAdmit(t, s, "r", op(T0, 10, 10))
	if !res.Admitted || res.Ahead != 0 {
		t.Fatalf("first visitor: %+v, want admitted with nobody ahead", res)
	}
	if res.Active != 1 || res.AdmittedLastMinute != 1 || res.Waiting != 0 || res.Slots != 9 {
		t.Fatalf("counts after one admission: %+v", res.RoomStats)
	}
}

func testConcurrencyLimit(t *testing.T, s usher.Store) {
	for i := range 3 {
		if res := mustAdmit(t, s, "r", op(T0, 3, 100)); !res.Admitted {
			t.Fatalf("visitor %d not admitted: %+v", i, res)
		}
	}
	res := mustAdmit(t, s, "r", op(T0, 3, 100))
	if res.Admitted || res.Slots != 0 || res.Waiting != 1 {
		t.Fatalf("fourth visitor: %+v, want waiting with no slots", res)
	}
}

func testRateLimit(t *testing.T, s usher.Store) {
	now := T0
	for i := range 5 {
		if res := mustAdmit(t, s, "r", op(now.Add(time.Duration(i)*time.Second), 100, 5)); !res.Admitted {
			t.Fatalf("visitor %d not admitted: %+v", i, res)
		}
	}
	// The five admissions at T0..T0+4s keep the sixth out until T0+60s
	// has passed the first of them (and a whole second more, for the
	// partly covered first second).
	w := op(T0.Add(59*time.Second), 100, 5)
	if res := mustAdmit(t, s, "r", w); res.Admitted || res.AdmittedLastMinute != 5 || res.Slots != 0 {
		t.Fatalf("sixth visitor within 60 s: %+v, want waiting with no slots", res)
	}
	w.From = usher.Cell{Exp: w.WaitExp, At: w.Now}
	w.Now = T0.Add(61 * time.Second)
	if res := mustAdmit(t, s, "r", w); !res.Admitted || res.Waiting != 0 {
		t.Fatalf("the waiter after 61 s: %+v, want admitted", res)
	}
}

func testActiveCellsExpire(t *testing.T, s usher.Store) {
	o := op(T0, 1, 100)
	o.ActiveExp = T0.Unix() + 15
	mustAdmit(t, s, "r", o)
	if res := mustAdmit(t, s, "r", op(T0.Add(14*time.Second), 1, 100)); res.Admitted {
		t.Fatalf("admitted while the only slot is held: %+v", res)
	}
	if st := mustStats(t, s, "r", T0.Add(15*time.Second)); st.Active != 0 {
		t.Fatalf("active at the cell's expiry = %d, want 0", st.Active)
	}
	o = op(T0.Add(15*time.Second), 1, 100)
	o.Bucket = T0.Unix() + 14 // the waiter from above checks in
	o.From = usher.Cell{Exp: T0.Unix() + 19, At: T0.Add(14 * time.Second)}
	if res := mustAdmit(t, s, "r", o); !res.Admitted || res.Waiting != 0 {
		t.Fatalf("waiter after the session expired: %+v, want admitted and nobody left waiting", res)
	}
}

func testWaitersAheadByBucket(t *testing.T, s usher.Store) {
	// Fill the room, then three waiters in three buckets.
	mustAdmit(t, s, "r", op(T0, 1, 100))
	for i := 1; i <= 3; i++ {
		o := op(T0.Add(time.Duration(i)*time.Second), 1, 100)
		o.WaitExp = T0.Unix() + 60
		res := mustAdmit(t, s, "r", o)
		if res.Admitted || res.Ahead != int64(i-1) {
			t.Fatalf("waiter %d: %+v, want waiting with %d ahead", i, res, i-1)
		}
	}
	// A second waiter in bucket 2 has one ahead (bucket 1), not two.
	o := op(T0.Add(2*time.Second+500*time.Millisecond), 1, 100)
	o.WaitExp = T0.Unix() + 60
	if res := mustAdmit(t, s, "r", o); res.Ahead != 1 || res.Waiting != 4 {
		t.Fatalf("second waiter in bucket 2: %+v, want 1 ahead, 4 waiting", res)
	}
}

func testWaitingMoveCountsOnce(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100))
	o := op(T0.Add(time.Second), 1, 100)
	mustAdmit(t, s, "r", o)
	// The same waiter checks in three times: still one waiter.
	from := usher.Cell{Exp: o.WaitExp, At: o.Now}
	for i := 2; i <= 4; i++ {
		c := o
		c.Now = T0.Add(time.Duration(i) * time.Second)
		c.From = from
		c.WaitExp = c.Now.Unix() + 5
		res := mustAdmit(t, s, "r", c)
		if res.Waiting != 1 {
			t.Fatalf("check-in %d: waiting = %d, want 1", i, res.Waiting)
		}
		from = usher.Cell{Exp: c.WaitExp, At: c.Now}
	}
}

func testAbandonedWaitersExpire(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100))
	o := op(T0.Add(time.Second), 1, 100) // waits in bucket T0+1, cell T0+6
	mustAdmit(t, s, "r", o)
	later := op(T0.Add(3*time.Second), 1, 100)
	if res := mustAdmit(t, s, "r", later); res.Ahead != 1 {
		t.Fatalf("behind a live waiter: ahead = %d, want 1", res.Ahead)
	}
	// The first waiter never checks in again: from its cell's expiry on it
	// is nobody's obstacle.
	later.Now = T0.Add(6 * time.Second)
	later.From = usher.Cell{Exp: later.WaitExp, At: T0.Add(3 * time.Second)}
	later.WaitExp = T0.Unix() + 11
	if res := mustAdmit(t, s, "r", later); res.Ahead != 0 || res.Waiting != 1 {
		t.Fatalf("after the abandoned waiter's cell expired: %+v, want 0 ahead, 1 waiting", res)
	}
}

func testTouchMovesActivity(t *testing.T, s usher.Store) {
	ctx := context.Background()
	o := op(T0, 1, 100)
	o.ActiveExp = T0.Unix() + 15
	mustAdmit(t, s, "r", o)
	mv := usher.Move{From: usher.Cell{Exp: T0.Unix() + 15, At: T0}, To: T0.Unix() + 25}
	if err := s.Touch(ctx, "r", T0.Add(10*time.Second), []usher.Move{mv}); err != nil {
		t.Fatal(err)
	}
	if st := mustStats(t, s, "r", T0.Add(20*time.Second)); st.Active != 1 {
		t.Fatalf("active after a move to a later cell = %d, want 1", st.Active)
	}
	if st := mustStats(t, s, "r", T0.Add(25*time.Second)); st.Active != 0 {
		t.Fatalf("active after the later cell expired = %d, want 0", st.Active)
	}
}

func testNoAdmitAndForce(t *testing.T, s usher.Store) {
	o := op(T0, 1, 100)
	o.NoAdmit = true
	if res := mustAdmit(t, s, "r", o); res.Admitted {
		t.Fatalf("NoAdmit admitted: %+v", res)
	}
	for i := range 3 {
		o := op(T0, 1, 100)
		o.Force = true
		if res := mustAdmit(t, s, "r", o); !res.Admitted || res.Active != int64(i+1) {
			t.Fatalf("Force %d: %+v", i, res)
		}
	}
}

func testRoomsAreSeparate(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "a", op(T0, 1, 100))
	if res := mustAdmit(t, s, "b", op(T0, 1, 100)); !res.Admitted {
		t.Fatalf("room b affected by room a: %+v", res)
	}
}

func testKeys(t *testing.T, s usher.Store) {
	ctx := context.Background()
	ks, err := s.LoadKeys(ctx)
	if err != nil || len(ks) != 0 {
		t.Fatalf("LoadKeys on a new store = %v, %v; want none", ks, err)
	}
	first := []usher.Key{{ID: "a", Secret: make([]byte, 32)}}
	got, err := s.SaveKeys(ctx, first)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("SaveKeys = %v, %v", got, err)
	}
	second := []usher.Key{{ID: "b", Secret: make([]byte, 32)}}
	got, err = s.SaveKeys(ctx, second)
	if err != nil || len(got) != 1 || got[0].ID != "a" {
		t.Fatalf("second SaveKeys = %v, %v; want the first ring kept", got, err)
	}
	if ks, _ := s.LoadKeys(ctx); len(ks) != 1 || ks[0].ID != "a" {
		t.Fatalf("LoadKeys = %v, want ring a", ks)
	}
}

func testParallelAdmits(t *testing.T, s usher.Store) {
	const limit, callers = 25, 200
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := op(T0.Add(time.Duration(i)*time.Millisecond), limit, 1000)
			res, err := s.Admit(context.Background(), "r", o)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Admitted {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != limit {
		t.Fatalf("%d parallel callers: %d admitted, want exactly %d", callers, got, limit)
	}
}
