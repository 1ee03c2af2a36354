package bench

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/usherhq/usher"
	engine "github.com/usherhq/usher/internal/admission"
)

// Aggregate mode: far-back waiters are parked rather than simulated check-in
// by check-in.
//
// A FIFO waiter far from the front is told to come back after the longest
// interval (max_refresh_interval, its jitter scaled to it) at every
// check-in, whatever its exact place, and each check-in only moves its
// waiting count to a later cell of the same bucket. While the simulator
// can prove, from the room's limits alone, that every one of the next K
// check-ins would be such a check-in, it applies them at once: one store
// call (Store.Admit with NoAdmit, the count moved from the cell its ticket
// names to the cell the K-th check-in would have put it in, the record set
// to that check-in's ticket), and the visitor's next action is the
// check-in after the K-th (or its departure, when its patience runs out
// first). The room's counts are then the same at every moment as with the
// check-ins made one by one: the waiter is live in its bucket from its
// arrival to the expiry of the last cell it would have been counted in, so
// every other visitor's place, the free slots, the waiting totals and the
// lapsed waiters are unchanged.
//
// The proof: a check-in's interval is max_refresh_interval while the
// waiter's place at its previous check-in, less the most the room could
// admit in an interval, leaves enough ahead that its turn is at least
// 2 * max_refresh_interval away by the limits alone (the engine's
// soonest), and the waiter is not near the front (it has at least
// total_active_users + new_users_per_minute ahead). The
// waiters ahead of it leave only by admissions (at most what the limits
// allow in the time, engine.MaxAdmissions) and by giving up (their counts
// lapse at their patience's end, which the simulator knows from their
// arrival on, within an interval and a grace after it). A lower bound on
// the place at the K+1-th check-in that keeps both margins proves all of
// them.
//
// What parking does not reproduce: the parked check-ins' answers (their
// positions and announced waits are not recorded, but the latest check-in
// of a visitor who gives up while parked is, at its time), and their part
// in the serving counter (a check-in updates the markers that follow its
// arrival bucket) and in refusals (which hold near-front check-ins to the
// next whole second). The first arrivals of each second (simSentinels of
// them) are never parked, so that every bucket a marker may follow keeps
// being sighted. The estimates therefore come from the same kind of
// markers, sighted less often; docs/benchmarks.md gives the figures of a
// run both ways.

// simSentinels is how many of each arrival second's first visitors are
// never parked.
const simSentinels = 3

// AggregateStats says what aggregate mode did in a run.
type AggregateStats struct {
	// Parked is how many times a waiter was parked.
	Parked int64 `json:"parked"`
	// Skipped is how many check-ins were applied in bulk rather than
	// decided one by one.
	Skipped int64 `json:"skipped_check_ins"`
	// Decisions is how many decisions the engine made.
	Decisions int64 `json:"decisions"`
}

// AggregateOK reports whether a room and origin can be simulated in
// aggregate mode, and why not: a FIFO room with adaptive check-ins, a rate
// limit, no events, no queue_all and no simulated origin (whose autopilot
// would move the limits the proof stands on).
func AggregateOK(room *usher.Room, origin OriginModel) error {
	s := &room.Settings
	switch {
	case s.QueueingMethod != usher.FIFO && s.QueueingMethod != "":
		return fmt.Errorf("queueing method %s: only fifo rooms park waiters", s.QueueingMethod)
	case len(room.Events) > 0:
		return fmt.Errorf("room %s has events: their limits change during the run", room.ID)
	case s.QueueAll:
		return fmt.Errorf("room %s queues all visitors", room.ID)
	case s.NewUsersPerMinute <= 0:
		return fmt.Errorf("room %s has no new_users_per_minute: nothing bounds how fast the line moves", room.ID)
	case engine.MaxInterval(s) <= s.RefreshInterval:
		return fmt.Errorf("room %s has no adaptive check-ins (max_refresh_interval not above refresh_interval)", room.ID)
	case origin.On():
		return fmt.Errorf("a simulated origin (--origin): the autopilot moves the limits during the run")
	}
	return nil
}

// simAgg is aggregate mode's state.
type simAgg struct {
	stats AggregateStats
	// deadlines counts the abandoners' deadlines by second (a Fenwick
	// tree), as they arrive.
	deadlines []int64
}

func newSimAgg(horizon time.Duration) *simAgg {
	return &simAgg{deadlines: make([]int64, int(horizon/time.Second)+2)}
}

func (a *simAgg) sec(d time.Duration) int {
	return min(max(int(d/time.Second), 0), len(a.deadlines)-2)
}

// addDeadline counts an abandoner whose patience ends at d.
func (a *simAgg) addDeadline(d time.Duration) {
	for i := a.sec(d) + 1; i < len(a.deadlines); i += i & -i {
		a.deadlines[i]++
	}
}

// upTo returns the deadlines counted in seconds up to that of d.
func (a *simAgg) upTo(d time.Duration) int64 {
	if d < 0 {
		return 0
	}
	var n int64
	for i := a.sec(d) + 1; i > 0; i -= i & -i {
		n += a.deadlines[i]
	}
	return n
}

// leavers bounds the waiters whose counts lapse in (from, to]: those whose
// patience ends in [from - span, to], span being the longest a count
// outlives its waiter's last check-in.
func (a *simAgg) leavers(from, to, span time.Duration) int64 {
	lo := from - span - time.Second
	n := a.upTo(to)
	if lo >= 0 {
		n -= a.upTo(lo)
	}
	return n
}

// farAhead is the fewest waiters ahead at every parked check-in: enough
// for the longest interval (soonest of them at least twice
// max_refresh_interval), and not near the front (at least
// total_active_users + new_users_per_minute, more than the slots free and
// the places that can free within an interval).
func farAhead(s *usher.Settings) int64 {
	lo, hi := int64(0), int64(1)
	for engine.Soonest(hi, s) < 2*engine.MaxInterval(s) {
		lo, hi = hi, 2*hi
	}
	for lo < hi { // the least a with engine.Soonest(a) >= 2 max_refresh_interval
		mid := lo + (hi-lo)/2
		if engine.Soonest(mid, s) >= 2*engine.MaxInterval(s) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return max(hi, int64(s.TotalActiveUsers)+int64(s.NewUsersPerMinute))
}

// sentinel reports whether visitor i is among the first simSentinels
// arrivals of its second.
func (s *sim) sentinel(i int32) bool {
	return i < simSentinels || s.offsets[i-simSentinels]/time.Second != s.offsets[i]/time.Second
}

// park applies v's next check-ins at once when it can prove them all far
// from the front (see the top of this file), and returns v's next action.
// ok is false when v is not parked: it checks in as usual.
func (s *sim) park(ctx context.Context, v *simVisitor, d *usher.Decision, now time.Duration, i int32) (nx simNext, ok bool, err error) {
	a := s.agg
	tk := &v.ticket
	st := &d.Settings
	if d.Phase != usher.NoEvent || d.QueueAll || tk.Back || tk.Joining || tk.Place != 0 ||
		(st.QueueingMethod != usher.FIFO && st.QueueingMethod != "") || st.NewUsersPerMinute <= 0 {
		return simNext{}, false, nil
	}
	maxIv := engine.MaxInterval(st)
	r := engine.LongestCheckIn(st, tk.Jitter)
	grace := engine.Grace(maxIv)
	t0 := s.at(now)
	if maxIv <= st.RefreshInterval || d.RefreshAfter != r || !tk.CountedAt.Equal(t0) || !tk.NextCheckIn.Equal(t0.Add(r)) ||
		tk.Cell != usher.CeilSecond(t0.Add(r).Add(grace)).Unix() {
		return simNext{}, false, nil // this check-in was not a far-back one
	}
	if s.sentinel(i) {
		return simNext{}, false, nil
	}
	need := farAhead(st)
	if s.load != nil {
		// Every parked check-in far back by the Redis store's margin too:
		// its interval to its cell's expiry is at most r + grace and a
		// second, rounded up.
		iv := int64((r+grace+time.Second-1)/time.Second) + 1
		need = max(need, farMarginOf(iv, st.TotalActiveUsers, st.NewUsersPerMinute))
	}
	ahead := d.Position - 1
	span := r + grace + time.Second
	// cond says whether the k-th check-in from now is provably far back.
	cond := func(k int) bool {
		tw := time.Duration(k) * r
		return ahead-engine.MaxAdmissions(tw, st)-engine.MaxAdmissions(r, st)-a.leavers(now, now+tw, span) >= need
	}
	kmax := int((s.horizon - now) / r)
	if v.patience > 0 {
		// Check-in k happens while now + k r < deadline.
		kmax = min(kmax, int((v.deadline-now-1)/r))
	}
	if kmax < 2 || !cond(3) {
		return simNext{}, false, nil
	}
	// The most check-ins K such that the one after them is still far back:
	// cond falls with k.
	k := sort.Search(kmax, func(k int) bool { return !cond(k + 2) }) // first k (0-based) failing: K = k
	if k < 2 {
		return simNext{}, false, nil
	}
	tK := now + time.Duration(k)*r
	at := s.at(tK)
	exp := usher.CeilSecond(at.Add(r).Add(grace)).Unix()
	res, err := s.cfg.Store.Admit(ctx, s.room.ID, usher.AdmitOp{
		Now: t0, Visitor: tk.VisitorID, Counted: at,
		Keep:              at.Add(engine.MaxAbsence(st.RefreshInterval)).Unix() + 1,
		TotalActiveUsers:  st.TotalActiveUsers,
		NewUsersPerMinute: st.NewUsersPerMinute,
		SessionDuration:   st.SessionDuration,
		Bucket:            tk.Bucket(),
		From:              usher.Cell{Exp: tk.Cell, At: tk.CountedAt},
		WaitExp:           exp,
		NoAdmit:           true,
	})
	if err != nil {
		return simNext{}, false, fmt.Errorf("bench: simulate: parking visitor %s at %v: %w", v.rec.ID, now, err)
	}
	if res.Replay || res.Admitted {
		return simNext{}, false, fmt.Errorf("bench: simulate: parking visitor %s at %v: the store did not take the parked check-ins (replay %v, admitted %v)",
			v.rec.ID, now, res.Replay, res.Admitted)
	}
	tk.CountedAt, tk.Cell, tk.NextCheckIn = at, exp, at.Add(r)
	v.parked, v.parkPos = tK, d.Position
	a.stats.Parked++
	a.stats.Skipped += int64(k)
	if s.load != nil {
		for j := 1; j <= k; j++ {
			s.load.move(s.at(now+time.Duration(j)*r), tk.Bucket())
		}
	}
	if v.patience > 0 && tK+r >= v.deadline {
		return simNext{at: ceilMS(max(v.deadline, tK)), act: simAbandon}, true, nil
	}
	return simNext{at: tK + r, act: simRequest}, true, nil
}
