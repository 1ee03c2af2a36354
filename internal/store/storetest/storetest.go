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
		{"RateWindowToTheMillisecond", testRateWindowMs},
		{"RateWindowNeverGoesBack", testRateWindowNeverGoesBack},
		{"ActiveCellsExpire", testActiveCellsExpire},
		{"WaitersAheadByBucket", testWaitersAheadByBucket},
		{"WaitingMoveCountsOnce", testWaitingMoveCountsOnce},
		{"AbandonedWaitersExpire", testAbandonedWaitersExpire},
		{"WaitersOfOwnIntervalsExpireEachInTurn", testOwnIntervals},
		{"RenewMovesActivity", testRenewMovesActivity},
		{"WaitingReplayChangesNothing", testWaitingReplay},
		{"TicketAdmittedOnce", testAdmittedOnce},
		{"ParallelReplaysAdmitOnce", testParallelReplays},
		{"RenewReplayChangesNothing", testRenewReplay},
		{"TakeOverAnAnswerLost", testTakeOver},
		{"TakeOverNeverAnAdmission", testTakeOverAdmitted},
		{"ParallelTakeOversCountOnce", testParallelTakeOvers},
		{"RenewFromUnknownCellNeverUndercounts", testRenewUnknownCell},
		{"LeaveFreesTheSlot", testLeave},
		{"CountsNeverNegative", testCountsNeverNegative},
		{"NewcomerHasNoRecordUntilItChecksIn", testNewcomerRecord},
		{"JoiningWaitsWhileOthersWait", testJoining},
		{"ClientLimit", testClientLimit},
		{"ClientLimitRefuse", testClientLimitRefuse},
		{"ClientLimitBurst", testClientLimitBurst},
		{"ClientLimitNetwork", testClientLimitNetwork},
		{"Peek", testPeek},
		{"Spend", testSpend},
		{"End", testEnd},
		{"EndOnceInParallel", testEndOnceInParallel},
		{"LapsedToldOnce", testLapsedOnce},
		{"LapsedNeverEndsARenewedSession", testLapsedRenewed},
		{"UnprovenAdmittedIntoAFreeSlot", testUnprovenFree},
		{"UnprovenWouldWaitCountsNothing", testUnprovenWaits},
		{"UnprovenBurstTakesTheFreeSlotsOnly", testUnprovenBurst},
		{"UseInvite", testUseInvite},
		{"DrawSeedFirstWriterWins", testDrawSeedFirstWriterWins},
		{"DrawEntriesAreASet", testDrawEntriesAreASet},
		{"RuntimeDocument", testRuntimeDocument},
		{"RuntimeSwapsOnce", testRuntimeSwapsOnce},
		{"AuditLog", testAuditLog},
		{"AuditAppend", testAuditAppend},
		{"NoAdmitAndForce", testNoAdmitAndForce},
		{"RoomsAreSeparate", testRoomsAreSeparate},
		{"Keys", testKeys},
		{"ParallelAdmitsHoldTheLimit", testParallelAdmits},
		{"Health", testHealth},
		{"Governor", testGovernor},
		{"AnalyticsMerge", testAnalyticsMerge},
		{"AnalyticsRefusesBadInput", testAnalyticsRefusesBadInput},
		{"AnalyticsParallelAddsMerge", testAnalyticsParallelAddsMerge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

// visitors numbers the visitors the suite makes, so each op is a
// distinct visitor.
var visitors atomic.Uint64

// newVisitor returns a visitor id no other op of the suite uses.
func newVisitor() [8]byte {
	var v [8]byte
	n := visitors.Add(1)
	for i := range v {
		v[i] = byte(n >> (8 * (7 - i)))
	}
	return v
}

// op returns an AdmitOp for a new visitor (no ticket) arriving at now.
func op(now time.Time, total, perMinute int) usher.AdmitOp {
	return usher.AdmitOp{
		Now:               now,
		Visitor:           newVisitor(),
		Counted:           now,
		Keep:              now.Unix() + 600,
		TotalActiveUsers:  total,
		NewUsersPerMinute: perMinute,
		Bucket:            now.Unix(),
		WaitExp:           now.Unix() + 5,
		ActiveExp:         now.Unix() + 30,
	}
}

// checkIn returns the op of o's visitor checking in at now with the ticket
// o issued (counted at o.Counted in o's waiting cell).
func checkIn(o usher.AdmitOp, now time.Time) usher.AdmitOp {
	c := o
	c.Now = now
	c.From = usher.Cell{Exp: o.WaitExp, At: o.Counted}
	c.Counted = now
	c.Keep = now.Unix() + 600
	c.WaitExp = now.Unix() + 5
	c.ActiveExp = now.Unix() + 30
	c.Client = usher.ClientOp{}
	return c
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
	w = checkIn(w, T0.Add(61*time.Second))
	w.WaitExp = T0.Unix() + 64 // its cell from T0+59 s had not expired
	w.From.Exp = T0.Unix() + 64
	if res := mustAdmit(t, s, "r", w); !res.Admitted || res.Waiting != 0 {
		t.Fatalf("the waiter after 61 s: %+v, want admitted", res)
	}
}

// testRateWindowMs: a second's admissions leave the rate window when the
// last of them is 60 s old, to the millisecond, not at the next whole
// second; until then all of them count.
func testRateWindowMs(t *testing.T, s usher.Store) {
	ms := func(d int64) time.Time { return T0.Add(time.Duration(d) * time.Millisecond) }
	for _, at := range []int64{100, 300} { // two admissions in the second T0
		if res := mustAdmit(t, s, "r", op(ms(at), 100, 2)); !res.Admitted {
			t.Fatalf("admission at %d ms: %+v", at, res)
		}
	}
	for _, tt := range []struct {
		at   int64 // ms after T0
		want int64 // admitted in the last minute
	}{
		{59_999, 2}, {60_099, 2}, {60_100, 2}, {60_299, 2},
	} {
		if st := mustStats(t, s, "r", ms(tt.at)); st.AdmittedLastMinute != tt.want {
			t.Errorf("stats at %d ms: %d admitted in the last minute, want %d", tt.at, st.AdmittedLastMinute, tt.want)
		}
	}
	// A waiter at 60.299 s is refused, at 60.300 s admitted: the limit of
	// 2 a minute holds in every window (t-60 s, t].
	w := op(ms(60_299), 100, 2)
	if res := mustAdmit(t, s, "r", w); res.Admitted || res.Slots != 0 || res.AdmittedLastMinute != 2 {
		t.Fatalf("waiter at 60.299 s: %+v, want waiting with no slots", res)
	}
	if _, st, err := s.Peek(context.Background(), "r", ms(60_299), w.Bucket); err != nil || st.AdmittedLastMinute != 2 {
		t.Fatalf("peek at 60.299 s: %+v %v, want 2 admitted in the last minute", st, err)
	}
	if _, st, err := s.Peek(context.Background(), "r", ms(60_300), w.Bucket); err != nil || st.AdmittedLastMinute != 0 {
		t.Fatalf("peek at 60.300 s: %+v %v, want none admitted in the last minute", st, err)
	}
	if res := mustAdmit(t, s, "r", checkIn(w, ms(60_300))); !res.Admitted || res.AdmittedLastMinute != 1 {
		t.Fatalf("waiter at 60.300 s: %+v, want admitted, one in the last minute", res)
	}
	for _, at := range []int64{60_999, 61_000, 120_299} {
		if st := mustStats(t, s, "r", ms(at)); st.AdmittedLastMinute != 1 {
			t.Errorf("stats at %d ms: %d admitted in the last minute, want 1", at, st.AdmittedLastMinute)
		}
	}
	if st := mustStats(t, s, "r", ms(120_300)); st.AdmittedLastMinute != 0 {
		t.Errorf("stats at 120.300 s: %d admitted in the last minute, want 0", st.AdmittedLastMinute)
	}
}

// testRateWindowNeverGoesBack: ops reach the store in another order than
// they were decided in (a call in flight longer than the next one's, on
// one node or two). Once an op has seen a second's admissions leave the
// rate window, no op applied after it sees them counted again, whatever
// its own time: the waiter ahead, decided a little earlier but applied
// after, is not refused the place a waiter behind it was just given.
func testRateWindowNeverGoesBack(t *testing.T, s usher.Store) {
	ms := func(d int64) time.Time { return T0.Add(time.Duration(d) * time.Millisecond) }
	for range 2 { // the rate of 2 a minute, taken at T0 + 100 ms
		if res := mustAdmit(t, s, "r", op(ms(100), 100, 2)); !res.Admitted {
			t.Fatalf("admission at 100 ms: %+v", res)
		}
	}
	// Two waiters, of the seconds T0+1 and T0+2, counted to T0+100 s.
	var w [2]usher.AdmitOp
	for i := range w {
		w[i] = op(ms(int64(i+1)*1000), 100, 2)
		w[i].WaitExp = T0.Unix() + 100
		if res := mustAdmit(t, s, "r", w[i]); res.Admitted || res.Ahead != int64(i) {
			t.Fatalf("waiter %d: %+v, want waiting with %d ahead", i, res, i)
		}
	}
	// The second waiter's check-in, decided at 60.150 s, is applied first:
	// the two admissions of T0 have left the window, and both waiters fit.
	if res := mustAdmit(t, s, "r", checkIn(w[1], ms(60_150))); !res.Admitted || res.Ahead != 1 {
		t.Fatalf("second waiter at 60.150 s: %+v, want admitted with 1 ahead", res)
	}
	// The first waiter's, decided at 60.050 s, is applied after it.
	if res := mustAdmit(t, s, "r", checkIn(w[0], ms(60_050))); !res.Admitted {
		t.Fatalf("first waiter at 60.050 s, applied after the second's admission: %+v, want admitted (the "+
			"window judged at its own time holds T0's admissions again: a FIFO inversion)", res)
	}
	if st := mustStats(t, s, "r", ms(60_000)); st.AdmittedLastMinute != 2 {
		t.Errorf("stats asked for 60.000 s after both: %d admitted in the last minute, want 2", st.AdmittedLastMinute)
	}
}

func testActiveCellsExpire(t *testing.T, s usher.Store) {
	o := op(T0, 1, 100)
	o.ActiveExp = T0.Unix() + 15
	mustAdmit(t, s, "r", o)
	w := op(T0.Add(14*time.Second), 1, 100)
	if res := mustAdmit(t, s, "r", w); res.Admitted {
		t.Fatalf("admitted while the only slot is held: %+v", res)
	}
	if st := mustStats(t, s, "r", T0.Add(15*time.Second)); st.Active != 0 {
		t.Fatalf("active at the cell's expiry = %d, want 0", st.Active)
	}
	if res := mustAdmit(t, s, "r", checkIn(w, T0.Add(15*time.Second))); !res.Admitted || res.Waiting != 0 {
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
	for i := 2; i <= 4; i++ {
		o = checkIn(o, T0.Add(time.Duration(i)*time.Second))
		res := mustAdmit(t, s, "r", o)
		if res.Waiting != 1 || res.Replay {
			t.Fatalf("check-in %d: %+v, want one waiter and no replay", i, res)
		}
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
	if n := mustLapsed(t, s, "r", T0.Add(3*time.Second)); n != 0 {
		t.Fatalf("lapsed = %d before any cell expired, want 0", n)
	}
	// The first waiter never checks in again: from its cell's expiry on it
	// is nobody's obstacle.
	if res := mustAdmit(t, s, "r", checkIn(later, T0.Add(6*time.Second))); res.Ahead != 0 || res.Waiting != 1 {
		t.Fatalf("after the abandoned waiter's cell expired: %+v, want 0 ahead, 1 waiting", res)
	}
	// It lapsed; the waiter who checked in (moved out of its cell) did not.
	if n := mustLapsed(t, s, "r", T0.Add(6*time.Second)); n != 1 {
		t.Fatalf("lapsed = %d after one waiter's cell expired, want 1", n)
	}
	if n := mustLapsed(t, s, "never-seen", T0); n != 0 {
		t.Fatalf("lapsed = %d for a room never seen, want 0", n)
	}
}

func mustLapsed(t *testing.T, s usher.Store, room string, now time.Time) int64 {
	t.Helper()
	n, err := s.Lapsed(context.Background(), room, now)
	if err != nil {
		t.Fatalf("Lapsed: %v", err)
	}
	return n
}

// testOwnIntervals: waiters given check-in intervals of different lengths
// (a waiter far back checks in less often) are each counted in the cell
// their own interval names, in cells seconds to minutes out, and each
// stops counting when its own cell expires, checked in or not; a waiter
// who checks in moves from its long cell to a short one once.
func testOwnIntervals(t *testing.T, s usher.Store) {
	full := op(T0, 1, 100)
	full.ActiveExp = T0.Unix() + 10_000 // the one place stays taken
	mustAdmit(t, s, "r", full)
	windows := []int64{20, 60, 150, 400} // seconds each waiter's cell lasts
	var ops []usher.AdmitOp
	for i, w := range windows {
		o := op(T0.Add(time.Duration(i+1)*time.Second), 1, 100)
		o.WaitExp = T0.Unix() + int64(i+1) + w
		mustAdmit(t, s, "r", o)
		ops = append(ops, o)
	}
	last := op(T0.Add(10*time.Second), 1, 100)
	last.WaitExp = T0.Unix() + 1000
	mustAdmit(t, s, "r", last)
	for i, o := range ops {
		// A moment before its cell expires the waiter still counts; at the
		// expiry it is gone.
		before := time.Unix(o.WaitExp-1, 0)
		last = checkIn(last, before)
		last.WaitExp = T0.Unix() + 1000
		if res := mustAdmit(t, s, "r", last); res.Ahead != int64(len(ops)-i) {
			t.Fatalf("at %ds, before waiter %d's cell expires: %d ahead, want %d", o.WaitExp-1-T0.Unix(), i, res.Ahead, len(ops)-i)
		}
		at := time.Unix(o.WaitExp, 0)
		if st := mustStats(t, s, "r", at); st.Waiting != int64(len(ops)-i) {
			t.Fatalf("at %ds, waiter %d's cell expired: %d waiting, want %d", o.WaitExp-T0.Unix(), i, st.Waiting, len(ops)-i)
		}
	}
	// A waiter with a long cell checks in and gets a short one: counted
	// once, and gone when the short one expires.
	far := op(T0.Add(500*time.Second), 1, 100)
	far.WaitExp = T0.Unix() + 500 + 300
	mustAdmit(t, s, "r", far)
	near := checkIn(far, T0.Add(600*time.Second)) // WaitExp: +5 s
	if res := mustAdmit(t, s, "r", near); res.Waiting != 2 {
		t.Fatalf("after the far waiter's check-in: %d waiting, want 2 (it and the last)", res.Waiting)
	}
	if st := mustStats(t, s, "r", time.Unix(near.WaitExp, 0)); st.Waiting != 1 {
		t.Fatalf("when its short cell expired: %d waiting, want 1", st.Waiting)
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

// renew returns the RenewOp of an admitted visitor counted at at in cell
// from, renewing to to at now.
func renew(v [8]byte, from int64, at, now time.Time, to int64) usher.RenewOp {
	return usher.RenewOp{Now: now, Visitor: v, From: usher.Cell{Exp: from, At: at}, To: to, Counted: now, Keep: max(to, now.Unix()+600)}
}

func mustRenew(t *testing.T, s usher.Store, room string, o usher.RenewOp) usher.RenewResult {
	t.Helper()
	res, err := s.Renew(context.Background(), room, o)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	return res
}

func testRenewMovesActivity(t *testing.T, s usher.Store) {
	o := op(T0, 1, 100)
	o.ActiveExp = T0.Unix() + 15
	mustAdmit(t, s, "r", o)
	res := mustRenew(t, s, "r", renew(o.Visitor, T0.Unix()+15, T0, T0.Add(10*time.Second), T0.Unix()+25))
	if res.Replay || res.Record.Cell != T0.Unix()+25 || !res.Record.Admitted {
		t.Fatalf("renewal: %+v", res)
	}
	if st := mustStats(t, s, "r", T0.Add(20*time.Second)); st.Active != 1 {
		t.Fatalf("active after a move to a later cell = %d, want 1", st.Active)
	}
	if st := mustStats(t, s, "r", T0.Add(25*time.Second)); st.Active != 0 {
		t.Fatalf("active after the later cell expired = %d, want 0", st.Active)
	}
}

// testWaitingReplay: a waiting ticket presented again after it was counted
// on (a copy on another client, a request sent twice) changes nothing.
func testWaitingReplay(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100)) // the room is full
	w := op(T0.Add(time.Second), 1, 100)
	mustAdmit(t, s, "r", w)
	first := checkIn(w, T0.Add(3*time.Second))
	if res := mustAdmit(t, s, "r", first); res.Replay || res.Waiting != 1 {
		t.Fatalf("first check-in: %+v", res)
	}
	for i := range 5 {
		again := checkIn(w, T0.Add(time.Duration(3+i)*time.Second)) // the same old ticket
		res := mustAdmit(t, s, "r", again)
		if !res.Replay || res.Admitted || res.Waiting != 1 || res.Ahead != 0 {
			t.Fatalf("replay %d: %+v, want a replay that changes nothing", i, res)
		}
		if !res.Record.At.Equal(first.Counted) {
			t.Fatalf("replay %d: record %+v, want the first check-in's", i, res.Record)
		}
	}
	// The latest ticket still checks in.
	if res := mustAdmit(t, s, "r", checkIn(first, T0.Add(6*time.Second))); res.Replay || res.Waiting != 1 {
		t.Fatalf("check-in with the latest ticket: %+v", res)
	}
}

// testAdmittedOnce: copies of one waiting ticket yield one admission, and
// the waiter behind them is not passed.
func testAdmittedOnce(t *testing.T, s usher.Store) {
	holder := op(T0, 1, 100)
	holder.ActiveExp = T0.Unix() + 10
	mustAdmit(t, s, "r", holder)
	copied := op(T0.Add(time.Second), 1, 100)
	copied.WaitExp = T0.Unix() + 60
	mustAdmit(t, s, "r", copied)
	honest := op(T0.Add(2*time.Second), 1, 100)
	honest.WaitExp = T0.Unix() + 60
	mustAdmit(t, s, "r", honest)
	// The slot frees at T0+10; the copied ticket is presented 20 times.
	admitted := 0
	for i := range 20 {
		c := checkIn(copied, T0.Add(10*time.Second+time.Duration(i)*time.Millisecond))
		c.WaitExp = T0.Unix() + 60
		res := mustAdmit(t, s, "r", c)
		if res.Admitted && !res.Replay {
			admitted++
		}
		if i > 0 && !res.Replay {
			t.Fatalf("copy %d was not a replay: %+v", i, res)
		}
	}
	if admitted != 1 {
		t.Fatalf("20 copies of one ticket got %d admissions, want 1", admitted)
	}
	// The honest waiter is next once the slot frees again; the copies
	// hold no place ahead of it.
	res := mustAdmit(t, s, "r", checkIn(honest, T0.Add(45*time.Second)))
	if res.Ahead != 0 {
		t.Fatalf("honest waiter: %d ahead after the copied ticket went in, want 0", res.Ahead)
	}
	if st := mustStats(t, s, "r", T0.Add(11*time.Second)); st.Active != 1 {
		t.Fatalf("active = %d, want the one admission", st.Active)
	}
}

// testParallelReplays: copies presented at the same moment from many
// callers still yield one admission.
func testParallelReplays(t *testing.T, s usher.Store) {
	w := op(T0, 1, 100)
	w.NoAdmit = true
	mustAdmit(t, s, "r", w)
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			c := checkIn(w, T0.Add(2*time.Second))
			c.NoAdmit = false
			res, err := s.Admit(context.Background(), "r", c)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Admitted && !res.Replay {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 1 {
		t.Fatalf("50 parallel copies: %d admissions, want 1", got)
	}
}

// testRenewReplay: an admitted ticket renewed once; its copies renew
// nothing and take nothing from any cell.
func testRenewReplay(t *testing.T, s usher.Store) {
	a := op(T0, 10, 100)
	a.ActiveExp = T0.Unix() + 30
	mustAdmit(t, s, "r", a)
	b := op(T0, 10, 100)
	b.ActiveExp = T0.Unix() + 30 // another visitor in the same cell
	mustAdmit(t, s, "r", b)
	mustRenew(t, s, "r", renew(a.Visitor, T0.Unix()+30, T0, T0.Add(5*time.Second), T0.Unix()+35))
	for i := range 6 {
		res := mustRenew(t, s, "r", renew(a.Visitor, T0.Unix()+30, T0, T0.Add(5*time.Second+time.Duration(i)*time.Millisecond), T0.Unix()+35))
		if !res.Replay {
			t.Fatalf("copy %d renewed: %+v", i, res)
		}
	}
	// b is still counted until T0+30, a until T0+35.
	if st := mustStats(t, s, "r", T0.Add(29*time.Second)); st.Active != 2 {
		t.Fatalf("active at +29s = %d, want 2", st.Active)
	}
	if st := mustStats(t, s, "r", T0.Add(31*time.Second)); st.Active != 1 {
		t.Fatalf("active at +31s = %d, want 1", st.Active)
	}
}

// testTakeOver: a check-in applied whose answer was lost leaves the
// visitor with the ticket the record was counted from. That ticket is a
// replay until the op's TakeOver reaches the record's count; then it takes
// the record over, moving the visitor's one count. No other older ticket
// ever takes it over, and once the visitor moves on from the ticket the
// takeover made, the ticket it took over from is a replay again.
func testTakeOver(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100)) // the room is full
	w := op(T0.Add(time.Second), 1, 100)
	mustAdmit(t, s, "r", w)
	lost := checkIn(w, T0.Add(3*time.Second)) // applied; its answer never arrives
	if res := mustAdmit(t, s, "r", lost); res.Replay || res.TookOver || !res.Record.From.Equal(w.Counted) {
		t.Fatalf("the lost check-in: %+v, want a record counted from the arrival's ticket", res)
	}
	// Too soon: the record was counted after TakeOver.
	early := checkIn(w, T0.Add(4*time.Second))
	early.TakeOver = lost.Counted.Add(-time.Millisecond)
	res := mustAdmit(t, s, "r", early)
	if !res.Replay || res.TookOver || res.Waiting != 1 {
		t.Fatalf("a takeover before it is allowed: %+v, want a replay", res)
	}
	if !res.Record.At.Equal(lost.Counted) || !res.Record.From.Equal(w.Counted) || res.Record.Admitted {
		t.Fatalf("the replay's record %+v, want at %v from %v", res.Record, lost.Counted, w.Counted)
	}
	// Without TakeOver, never.
	if res := mustAdmit(t, s, "r", checkIn(w, T0.Add(5*time.Second))); !res.Replay || res.TookOver {
		t.Fatalf("an op without TakeOver: %+v, want a replay", res)
	}
	over := checkIn(w, T0.Add(5*time.Second))
	over.TakeOver = lost.Counted
	res = mustAdmit(t, s, "r", over)
	if res.Replay || !res.TookOver || res.Admitted || res.Waiting != 1 || res.Ahead != 0 {
		t.Fatalf("the takeover: %+v, want the visitor counted once, still waiting", res)
	}
	if !res.Record.At.Equal(over.Counted) || !res.Record.From.Equal(w.Counted) {
		t.Fatalf("the takeover's record %+v, want at %v from %v", res.Record, over.Counted, w.Counted)
	}
	// The lost ticket, were it presented after all, is behind: a replay,
	// however late TakeOver allows.
	held := checkIn(lost, T0.Add(8*time.Second))
	held.TakeOver = T0.Add(time.Hour)
	if res := mustAdmit(t, s, "r", held); !res.Replay || res.TookOver || res.Waiting != 1 {
		t.Fatalf("the lost ticket after the takeover: %+v, want a replay", res)
	}
	// The takeover's ticket goes on as usual; then the arrival's ticket
	// no longer takes anything over.
	next := checkIn(over, T0.Add(8*time.Second))
	if res := mustAdmit(t, s, "r", next); res.Replay || res.TookOver || !res.Record.From.Equal(over.Counted) || res.Waiting != 1 {
		t.Fatalf("the check-in after the takeover: %+v", res)
	}
	again := checkIn(w, T0.Add(9*time.Second))
	again.TakeOver = T0.Add(time.Hour)
	if res := mustAdmit(t, s, "r", again); !res.Replay || res.TookOver || res.Waiting != 1 {
		t.Fatalf("the arrival's ticket after the visitor moved on: %+v, want a replay", res)
	}
	// The one count expires with the last cell it was moved to.
	if st := mustStats(t, s, "r", T0.Add(12*time.Second)); st.Waiting != 1 {
		t.Fatalf("waiting %d before the last cell expired, want 1", st.Waiting)
	}
	if st := mustStats(t, s, "r", T0.Add(13*time.Second)); st.Waiting != 0 {
		t.Fatalf("waiting %d after the last cell expired, want 0", st.Waiting)
	}
}

// testTakeOverAdmitted: an admission whose answer was lost is never taken
// over: the ticket it was counted from is a replay and the record says
// so (the engine hands it the counted session); nothing is counted twice.
func testTakeOverAdmitted(t *testing.T, s usher.Store) {
	w := op(T0, 1, 100)
	w.NoAdmit = true
	mustAdmit(t, s, "r", w)
	lost := checkIn(w, T0.Add(2*time.Second))
	lost.NoAdmit = false
	if res := mustAdmit(t, s, "r", lost); !res.Admitted || !res.Record.From.Equal(w.Counted) {
		t.Fatalf("the lost admission: %+v", res)
	}
	for i := range 3 {
		c := checkIn(w, T0.Add(time.Duration(10+i)*time.Second))
		c.TakeOver = T0.Add(time.Hour)
		res := mustAdmit(t, s, "r", c)
		if !res.Replay || res.TookOver || !res.Admitted || !res.Record.Admitted ||
			!res.Record.At.Equal(lost.Counted) || !res.Record.From.Equal(w.Counted) || res.Record.Cell != lost.ActiveExp {
			t.Fatalf("presentation %d of the ticket the admission was counted from: %+v", i, res)
		}
		if res.Active != 1 || res.AdmittedLastMinute != 1 || res.Waiting != 0 {
			t.Fatalf("presentation %d: counts %+v, want the one admission", i, res.RoomStats)
		}
	}
	// A renewal's record is counted from the admitted ticket.
	r := mustRenew(t, s, "r", renew(w.Visitor, lost.ActiveExp, lost.Counted, T0.Add(15*time.Second), T0.Unix()+45))
	if r.Replay || !r.Record.From.Equal(lost.Counted) {
		t.Fatalf("renewal: %+v, want a record counted from the admitted ticket", r)
	}
	c := checkIn(w, T0.Add(16*time.Second))
	c.TakeOver = T0.Add(time.Hour)
	if res := mustAdmit(t, s, "r", c); !res.Replay || res.Record.From.Equal(w.Counted) {
		t.Fatalf("the waiting ticket after a renewal: %+v, want a replay of a record not counted from it", res)
	}
}

// testParallelTakeOvers: copies of the ticket a lost answer left behind,
// presented at once from many callers, take the record over once.
func testParallelTakeOvers(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100)) // the room is full
	w := op(T0.Add(time.Second), 1, 100)
	mustAdmit(t, s, "r", w)
	lost := checkIn(w, T0.Add(3*time.Second))
	mustAdmit(t, s, "r", lost)
	var took atomic.Int64
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			c := checkIn(w, T0.Add(6*time.Second))
			c.Counted = c.Counted.Add(time.Duration(i) * time.Millisecond)
			c.TakeOver = lost.Counted
			res, err := s.Admit(context.Background(), "r", c)
			if err != nil {
				t.Error(err)
				return
			}
			if res.TookOver {
				took.Add(1)
			} else if !res.Replay {
				t.Errorf("copy %d neither took over nor was a replay: %+v", i, res)
			}
		})
	}
	wg.Wait()
	if got := took.Load(); got != 1 {
		t.Fatalf("50 parallel copies: %d takeovers, want 1", got)
	}
	if st := mustStats(t, s, "r", T0.Add(6*time.Second)); st.Waiting != 1 {
		t.Fatalf("waiting %d, want the one visitor", st.Waiting)
	}
}

// testRenewUnknownCell: a ticket that names a cell the store never counted
// it in (its renewal was lost with a node) is taken out of the cell the
// store did count it in, not the one it names.
func testRenewUnknownCell(t *testing.T, s usher.Store) {
	a := op(T0, 10, 100)
	a.ActiveExp = T0.Unix() + 30
	mustAdmit(t, s, "r", a)
	other := op(T0.Add(5*time.Second), 10, 100)
	other.ActiveExp = T0.Unix() + 40
	mustAdmit(t, s, "r", other)
	// a's ticket says it was renewed at T0+5 into cell T0+40; the store
	// never saw that renewal. Its next renewal must not take from T0+40.
	mustRenew(t, s, "r", renew(a.Visitor, T0.Unix()+40, T0.Add(5*time.Second), T0.Add(8*time.Second), T0.Unix()+50))
	if st := mustStats(t, s, "r", T0.Add(35*time.Second)); st.Active != 2 {
		t.Fatalf("active at +35s = %d, want 2 (other's session and a's renewed one)", st.Active)
	}
}

// testLeave: a renewal to no cell takes the visitor out, once.
func testLeave(t *testing.T, s usher.Store) {
	a := op(T0, 1, 100)
	mustAdmit(t, s, "r", a)
	mustRenew(t, s, "r", renew(a.Visitor, a.ActiveExp, T0, T0.Add(time.Second), 0))
	mustRenew(t, s, "r", renew(a.Visitor, a.ActiveExp, T0, T0.Add(time.Second), 0)) // a copy
	if st := mustStats(t, s, "r", T0.Add(2*time.Second)); st.Active != 0 {
		t.Fatalf("active after leaving = %d, want 0", st.Active)
	}
	if res := mustAdmit(t, s, "r", op(T0.Add(2*time.Second), 1, 100)); !res.Admitted {
		t.Fatalf("the freed slot was not given: %+v", res)
	}
}

// testCountsNeverNegative: tickets that name cells the store never counted
// them in (no record, counts lost) never drive a count below zero.
func testCountsNeverNegative(t *testing.T, s usher.Store) {
	for i := range 10 {
		r := renew(newVisitor(), T0.Unix()+30, T0.Add(time.Second), T0.Add(2*time.Second+time.Duration(i)*time.Millisecond), T0.Unix()+1)
		r.To = 0
		mustRenew(t, s, "r", r)
	}
	st := mustStats(t, s, "r", T0.Add(3*time.Second))
	if st.Active != 0 {
		t.Fatalf("active = %d, want 0", st.Active)
	}
	a := op(T0.Add(3*time.Second), 1, 100)
	if res := mustAdmit(t, s, "r", a); !res.Admitted || res.Active != 1 {
		t.Fatalf("after stray departures: %+v, want admitted and exactly 1 active", res)
	}
	if res := mustAdmit(t, s, "r", op(T0.Add(3*time.Second), 1, 100)); res.Admitted {
		t.Fatalf("a second visitor admitted into a room of 1: %+v", res)
	}
}

// testNewcomerRecord: a visitor is remembered from its first check-in on,
// so visitors that never come back cost no record; its first ticket still
// counts once.
func testNewcomerRecord(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100))
	w := op(T0.Add(time.Second), 1, 100)
	if res := mustAdmit(t, s, "r", w); !res.Record.At.IsZero() {
		t.Fatalf("a newcomer that waits is remembered: %+v", res.Record)
	}
	c := checkIn(w, T0.Add(2*time.Second))
	if res := mustAdmit(t, s, "r", c); res.Replay || res.Record.At.IsZero() {
		t.Fatalf("first check-in: %+v, want counted and remembered", res)
	}
	if res := mustAdmit(t, s, "r", checkIn(w, T0.Add(3*time.Second))); !res.Replay || res.Waiting != 1 {
		t.Fatalf("the first ticket again: %+v, want a replay", res)
	}
}

// testJoining: a visitor joining a random room is admitted at once only
// while nobody waits.
func testJoining(t *testing.T, s usher.Store) {
	j := op(T0, 2, 100)
	j.Joining, j.Random = true, true
	if res := mustAdmit(t, s, "r", j); !res.Admitted {
		t.Fatalf("joining an empty room: %+v, want admitted", res)
	}
	full := op(T0, 1, 100) // the room of 1 is full now: this one waits
	full.TotalActiveUsers = 1
	mustAdmit(t, s, "r", full)
	j = op(T0, 5, 100) // slots are free under a limit of 5, but one waits
	j.Joining, j.Random = true, true
	if res := mustAdmit(t, s, "r", j); res.Admitted {
		t.Fatalf("joining while one waits: %+v, want waiting", res)
	}
}

// testClientLimit: a client key gets PerMinute tickets a minute; the rest
// wait at the back bucket; other keys are not affected.
func testClientLimit(t *testing.T, s usher.Store) {
	back := T0.Unix() + 86400
	granted := 0
	for i := range 30 {
		o := op(T0.Add(time.Duration(i)*100*time.Millisecond), 1000, 1000)
		o.Client = usher.ClientOp{Key: 42, PerMinute: 10, Back: back}
		res := mustAdmit(t, s, "r", o)
		switch {
		case res.OverClient && res.Admitted:
			t.Fatalf("ticket %d admitted over the client's limit", i)
		case !res.OverClient:
			granted++
		}
	}
	if granted != 10 {
		t.Fatalf("one client got %d tickets in a minute, want 10", granted)
	}
	if st := mustStats(t, s, "r", T0.Add(3*time.Second)); st.Waiting != 20 {
		t.Fatalf("waiting = %d, want the 20 over the limit at the back", st.Waiting)
	}
	o := op(T0.Add(3*time.Second), 1000, 1000)
	o.Client = usher.ClientOp{Key: 7, PerMinute: 10, Back: back}
	if res := mustAdmit(t, s, "r", o); res.OverClient || !res.Admitted {
		t.Fatalf("another client: %+v", res)
	}
	// Anyone who arrives later still goes ahead of the back of the line.
	full := op(T0.Add(4*time.Second), 1, 1000)
	full.Client = usher.ClientOp{Key: 8, PerMinute: 10, Back: back}
	if res := mustAdmit(t, s, "r", full); res.Ahead != 0 {
		t.Fatalf("a later arrival has %d ahead, want 0 (the over-limit tickets are at the back)", res.Ahead)
	}
}

// testClientLimitBurst: a client that spends its budget in the last
// seconds of a minute and keeps asking every half second for two minutes
// gets at most its limit in any 60 s window (a ticket counts for 60 to 70 s,
// limit.Slices), and its limit again once those have gone.
func testClientLimitBurst(t *testing.T, s usher.Store) {
	const perMinute = 10
	back := T0.Unix() + 86400
	var granted []time.Time
	for at := T0.Add(55 * time.Second); at.Before(T0.Add(3 * time.Minute)); at = at.Add(500 * time.Millisecond) {
		o := op(at, 1000, 1000)
		o.Client = usher.ClientOp{Key: 43, PerMinute: perMinute, Back: back}
		if res := mustAdmit(t, s, "r", o); !res.OverClient {
			granted = append(granted, at)
		}
	}
	most, lo := 0, 0
	for hi := range granted {
		for granted[hi].Sub(granted[lo]) >= time.Minute {
			lo++
		}
		most = max(most, hi-lo+1)
	}
	if most > perMinute {
		t.Fatalf("%d tickets in one 60 s window at a limit of %d: %v", most, perMinute, granted)
	}
	if len(granted) < 2*perMinute {
		t.Fatalf("%d tickets in 125 s at a limit of %d a minute", len(granted), perMinute)
	}
}

// testClientLimitRefuse: in reject mode an over-limit client is not
// counted at all.
func testClientLimitRefuse(t *testing.T, s usher.Store) {
	for i := range 5 {
		o := op(T0, 1, 1000)
		o.NoAdmit = true
		o.Client = usher.ClientOp{Key: 42, PerMinute: 2, Refuse: true}
		res := mustAdmit(t, s, "r", o)
		if res.OverClient != (i >= 2) {
			t.Fatalf("ticket %d: over = %v", i, res.OverClient)
		}
	}
	if st := mustStats(t, s, "r", T0); st.Waiting != 2 {
		t.Fatalf("waiting = %d, want the 2 within the limit", st.Waiting)
	}
}

func testPeek(t *testing.T, s usher.Store) {
	ctx := context.Background()
	mustAdmit(t, s, "r", op(T0, 1, 100))
	for i := 1; i <= 3; i++ {
		o := op(T0.Add(time.Duration(i)*time.Second), 1, 100)
		o.WaitExp = T0.Unix() + 60
		mustAdmit(t, s, "r", o)
	}
	ahead, st, err := s.Peek(ctx, "r", T0.Add(5*time.Second), T0.Unix()+3)
	if err != nil || ahead != 2 || st.Waiting != 3 || st.Active != 1 {
		t.Fatalf("Peek = %d, %+v, %v; want 2 ahead, 3 waiting, 1 active", ahead, st, err)
	}
	// Peek changes nothing.
	if st2 := mustStats(t, s, "r", T0.Add(5*time.Second)); st2.Waiting != 3 {
		t.Fatalf("after Peek: %+v", st2)
	}
}

func testSpend(t *testing.T, s usher.Store) {
	ctx := context.Background()
	id := [16]byte{1, 2, 3}
	until := time.Now().Add(time.Minute)
	if fresh, err := s.Spend(ctx, "r", id, until); err != nil || !fresh {
		t.Fatalf("first Spend = %v, %v; want fresh", fresh, err)
	}
	for range 3 {
		if fresh, err := s.Spend(ctx, "r", id, until); err != nil || fresh {
			t.Fatalf("Spend again = %v, %v; want spent", fresh, err)
		}
	}
	if fresh, _ := s.Spend(ctx, "other", id, until); !fresh {
		t.Fatal("an id spent in one room is spent in another")
	}
	var wg sync.WaitGroup
	var fresh atomic.Int64
	for range 20 {
		wg.Go(func() {
			if ok, err := s.Spend(ctx, "r", [16]byte{9}, until); err == nil && ok {
				fresh.Add(1)
			}
		})
	}
	wg.Wait()
	if fresh.Load() != 1 {
		t.Fatalf("20 parallel spends of one id: %d fresh, want 1", fresh.Load())
	}
}

func testUseInvite(t *testing.T, s usher.Store) {
	ctx := context.Background()
	id := [16]byte{7}
	exp := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 12 {
		wg.Go(func() {
			if used, err := s.UseInvite(ctx, "r", id, 5, exp); err == nil && used {
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 5 {
		t.Fatalf("12 uses of an invite for 5: %d accepted", ok.Load())
	}
	if used, _ := s.UseInvite(ctx, "other", id, 5, exp); !used {
		t.Fatal("another room's invite with the same id was refused")
	}
}

// testEnd: ending a session (a revocation) frees its slot once, whatever
// ticket is presented, and leaves a record that no ticket of the visitor
// renews past; ending it again changes nothing and is a replay.
func testEnd(t *testing.T, s usher.Store) {
	a := op(T0, 1, 100)
	mustAdmit(t, s, "r", a)
	// The visitor renewed once; the revocation does not know the ticket.
	mustRenew(t, s, "r", renew(a.Visitor, a.ActiveExp, T0, T0.Add(5*time.Second), T0.Unix()+40))
	for i := range 3 {
		res := mustRenew(t, s, "r", usher.RenewOp{Now: T0.Add(6 * time.Second), Visitor: a.Visitor, End: true,
			Counted: T0.Add(6 * time.Second), Keep: T0.Unix() + 600})
		// The first End ends the session; the others change nothing and
		// say so (a revocation is told once).
		if res.Replay != (i > 0) || res.Record.Cell != 0 || !res.Record.Admitted {
			t.Fatalf("End %d: %+v", i+1, res)
		}
	}
	if st := mustStats(t, s, "r", T0.Add(7*time.Second)); st.Active != 0 {
		t.Fatalf("active after the session ended = %d, want 0", st.Active)
	}
	// The renewed ticket, presented again, is a replay of an ended
	// session.
	res := mustRenew(t, s, "r", renew(a.Visitor, T0.Unix()+40, T0.Add(5*time.Second), T0.Add(8*time.Second), T0.Unix()+48))
	if !res.Replay || res.Record.Cell != 0 {
		t.Fatalf("renewing after the end: %+v, want a replay of the ended record", res)
	}
	if st := mustStats(t, s, "r", T0.Add(9*time.Second)); st.Active != 0 {
		t.Fatalf("active after a renewal of an ended session = %d, want 0", st.Active)
	}
}
