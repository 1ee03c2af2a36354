package storetest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// The tests here hold what is true once: a session's end (revoked, or
// lapsed) is applied by one op only, and a new visitor without a proof
// of work takes a free slot or nothing.

// testEndOnceInParallel: 20 parallel revocations of one running session
// free its slot once and report one of them as the op that ended it.
func testEndOnceInParallel(t *testing.T, s usher.Store) {
	a := op(T0, 2, 100)
	mustAdmit(t, s, "r", a)
	var wg sync.WaitGroup
	var ended, failed atomic.Int64
	for range 20 {
		wg.Go(func() {
			res, err := s.Renew(t.Context(), "r", usher.RenewOp{Now: T0.Add(time.Second), Visitor: a.Visitor, End: true,
				Counted: T0.Add(time.Second), Keep: T0.Unix() + 600})
			switch {
			case err != nil:
				failed.Add(1)
			case !res.Replay:
				ended.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 0 || ended.Load() != 1 {
		t.Fatalf("20 parallel ends of one session: %d ended it, %d failed; want 1 and 0", ended.Load(), failed.Load())
	}
	if st := mustStats(t, s, "r", T0.Add(2*time.Second)); st.Active != 0 {
		t.Fatalf("active after the session was ended = %d, want 0", st.Active)
	}
}

// testLapsedOnce: a session that ended by itself is told lapsed by one op
// only (parallel, and after); a revoked session is never told lapsed; the
// record is forgotten after its Keep.
func testLapsedOnce(t *testing.T, s usher.Store) {
	a := op(T0, 10, 100)
	mustAdmit(t, s, "r", a)
	at := time.Unix(a.ActiveExp, 0).Add(time.Second) // the session's count has expired
	lapse := func(v [8]byte, now time.Time) usher.RenewOp {
		return usher.RenewOp{Now: now, Visitor: v, Lapsed: true, Counted: now, Keep: now.Unix() + 60}
	}
	var wg sync.WaitGroup
	var first atomic.Int64
	for range 20 {
		wg.Go(func() {
			if res, err := s.Renew(t.Context(), "r", lapse(a.Visitor, at)); err == nil && !res.Replay {
				first.Add(1)
			}
		})
	}
	wg.Wait()
	if first.Load() != 1 {
		t.Fatalf("20 parallel lapses of one session: %d first, want 1", first.Load())
	}
	if res := mustRenew(t, s, "r", lapse(a.Visitor, at.Add(10*time.Second))); !res.Replay || res.Record.Cell != 0 {
		t.Fatalf("a lapse told again: %+v, want a replay", res)
	}
	// A session the store forgot (or never saw) is told lapsed once too.
	unknown := newVisitor()
	if res := mustRenew(t, s, "r", lapse(unknown, at)); res.Replay {
		t.Fatalf("the first lapse of a forgotten session: %+v, want it told", res)
	}
	if res := mustRenew(t, s, "r", lapse(unknown, at.Add(time.Second))); !res.Replay {
		t.Fatalf("the second lapse of a forgotten session: %+v, want a replay", res)
	}
	// A revoked session is not told lapsed: its end was told.
	b := op(T0, 10, 100)
	mustAdmit(t, s, "r", b)
	mustRenew(t, s, "r", usher.RenewOp{Now: T0.Add(time.Second), Visitor: b.Visitor, End: true,
		Counted: T0.Add(time.Second), Keep: at.Unix() + 600})
	if res := mustRenew(t, s, "r", lapse(b.Visitor, at)); !res.Replay {
		t.Fatalf("a lapse of a revoked session: %+v, want a replay", res)
	}
	// And a lapsed session is not revoked again: its end was told.
	if res := mustRenew(t, s, "r", usher.RenewOp{Now: at.Add(2 * time.Second), Visitor: a.Visitor, End: true,
		Counted: at.Add(2 * time.Second), Keep: at.Unix() + 600}); !res.Replay {
		t.Fatalf("a revocation of a lapsed session: %+v, want a replay", res)
	}
	if st := mustStats(t, s, "r", at.Add(3*time.Second)); st.Active != 0 {
		t.Fatalf("active = %d, want 0", st.Active)
	}
}

// testLapsedRenewed: a lapse told with an old ticket of a session another
// ticket of the visitor renewed changes nothing: the session runs on.
func testLapsedRenewed(t *testing.T, s usher.Store) {
	a := op(T0, 10, 100)
	mustAdmit(t, s, "r", a)
	to := T0.Unix() + 90
	mustRenew(t, s, "r", renew(a.Visitor, a.ActiveExp, T0, T0.Add(20*time.Second), to))
	at := time.Unix(a.ActiveExp, 0).Add(time.Second) // the old ticket's session is over
	res := mustRenew(t, s, "r", usher.RenewOp{Now: at, Visitor: a.Visitor, Lapsed: true, Counted: at, Keep: at.Unix() + 60})
	if !res.Replay || res.Record.Cell != to {
		t.Fatalf("a lapse of a renewed session: %+v, want a replay of the record in cell %d", res, to)
	}
	if st := mustStats(t, s, "r", at); st.Active != 1 {
		t.Fatalf("active after a lapse of a renewed session = %d, want 1", st.Active)
	}
}

// unproven returns an op of a new visitor without a proof of work.
func unproven(now time.Time, total int) usher.AdmitOp {
	o := op(now, total, 100)
	o.Unproven = true
	return o
}

// testUnprovenFree: a new visitor without a proof goes in at once while a
// slot is free, counted as any admission.
func testUnprovenFree(t *testing.T, s usher.Store) {
	res := mustAdmit(t, s, "r", unproven(T0, 1))
	if !res.Admitted || res.Unproven {
		t.Fatalf("an unproven visitor in an empty room: %+v, want admitted", res)
	}
	if st := mustStats(t, s, "r", T0); st.Active != 1 {
		t.Fatalf("active = %d, want 1", st.Active)
	}
}

// testUnprovenWaits: a new visitor without a proof that would wait (no
// slot, queue_all, passthrough past the limits, over its client's limit) is
// not counted, not remembered, not counted against its client.
func testUnprovenWaits(t *testing.T, s usher.Store) {
	mustAdmit(t, s, "r", op(T0, 1, 100)) // the room is full
	cases := []struct {
		name string
		edit func(*usher.AdmitOp)
	}{
		{"full", func(*usher.AdmitOp) {}},
		{"no admit", func(o *usher.AdmitOp) { o.TotalActiveUsers, o.NoAdmit = 10, true }},
		{"force past the limits", func(o *usher.AdmitOp) { o.Force = true }},
		{"client limit", func(o *usher.AdmitOp) { o.Client = usher.ClientOp{Key: 77, PerMinute: 1, Back: T0.Unix() + 86400} }},
	}
	for _, tc := range cases {
		for range 3 {
			o := unproven(T0.Add(time.Second), 1)
			tc.edit(&o)
			res := mustAdmit(t, s, "r", o)
			if res.Admitted || !res.Unproven || res.OverClient {
				t.Fatalf("%s: %+v, want Unproven and nothing else", tc.name, res)
			}
			if res.Record != (usher.Record{}) {
				t.Fatalf("%s: the store remembers an unproven visitor: %+v", tc.name, res.Record)
			}
		}
		if st := mustStats(t, s, "r", T0.Add(time.Second)); st.Waiting != 0 || st.Active != 1 {
			t.Fatalf("%s: waiting %d, active %d; want 0 and 1", tc.name, st.Waiting, st.Active)
		}
	}
	// The client's limit was not spent by the unproven tries: its one
	// ticket of the minute is still there.
	o := op(T0.Add(2*time.Second), 1, 100)
	o.Client = usher.ClientOp{Key: 77, PerMinute: 1, Back: T0.Unix() + 86400}
	if res := mustAdmit(t, s, "r", o); res.OverClient {
		t.Fatalf("a proven visitor of a client whose unproven tries were refused: %+v, want within the limit", res)
	}
}

// testUnprovenBurst: 50 parallel unproven visitors on a room of 3 free
// slots: 3 admitted, 47 told to prove, nothing counted waiting.
func testUnprovenBurst(t *testing.T, s usher.Store) {
	var wg sync.WaitGroup
	var in, held atomic.Int64
	for range 50 {
		wg.Go(func() {
			res, err := s.Admit(t.Context(), "r", unproven(T0, 3))
			switch {
			case err != nil:
			case res.Admitted:
				in.Add(1)
			case res.Unproven:
				held.Add(1)
			}
		})
	}
	wg.Wait()
	if in.Load() != 3 || held.Load() != 47 {
		t.Fatalf("50 unproven visitors on 3 free slots: %d admitted, %d held; want 3 and 47", in.Load(), held.Load())
	}
	if st := mustStats(t, s, "r", T0); st.Waiting != 0 || st.Active != 3 {
		t.Fatalf("waiting %d, active %d; want 0 and 3", st.Waiting, st.Active)
	}
}
