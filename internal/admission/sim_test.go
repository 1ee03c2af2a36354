package admission

import (
	"cmp"
	"container/heap"
	"context"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
)

// The simulation drives the engine over an in-memory store on simulated
// time with virtual visitors who arrive, wait (checking in when told),
// give up, browse and leave, and checks the single-node invariants against
// the visitors' own record of what happened (the truth), not against the
// store's counters.

type simVisitor struct {
	id       int
	arrive   time.Time
	patience time.Duration // gives up after waiting this long (0: never)
	browse   time.Duration // stays this long after admission
	every    time.Duration // one request per this while browsing

	ticket      *usher.Ticket
	admitted    time.Time
	lastReq     time.Time
	abandoned   bool
	done        bool
	bucket      int64
	lastWait    time.Time // last check-in answered "wait"
	wasAdmitted bool
	sessions    []session // the visitor's sessions, by the visitors' own clock
}

// session is one admitted stay: from admission to its end, which is
// SessionDuration after the last request (or after admission when renewal
// is disabled), rounded up to the whole second as usher documents it.
type session struct{ from, end time.Time }

func (v *simVisitor) inSession(now time.Time) bool {
	n := len(v.sessions)
	return n > 0 && now.Before(v.sessions[n-1].end)
}

type simEvent struct {
	at  time.Time
	v   *simVisitor
	seq int
}

type eventQueue []simEvent

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if q[i].at.Equal(q[j].at) {
		return q[i].seq < q[j].seq
	}
	return q[i].at.Before(q[j].at)
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *eventQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

type simConfig struct {
	seed        uint64
	visitors    int
	arrivalSpan time.Duration
	room        usher.Room
	abandonFrac float64
	browseMin   time.Duration
	browseMax   time.Duration
	horizon     time.Duration
	// patienceMax is the longest a waiter who gives up waits first (zero:
	// 30 s).
	patienceMax time.Duration
}

type simAdmission struct {
	at     time.Time
	bucket int64
}

type simResult struct {
	admissions    []time.Time
	admitted      []simAdmission // in time order
	maxActive     int
	utilization   float64
	queueSamples  int
	inversions    int
	requeued      int
	revived       int
	earlyQueued   int
	admittedCount int
	// checkIns counts the decisions on waiting tickets (counted or early).
	checkIns int
	// longestWindow is the longest a waiting ticket's count outlives the
	// check-in that made it (its cell's expiry less its counted-at time).
	longestWindow time.Duration
}

func runSim(t *testing.T, cfg simConfig) simResult {
	t.Helper()
	ctx := context.Background()
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rng := rand.New(rand.NewPCG(cfg.seed, 7))
	eng := New(st, Options{Rand: rng.Uint64})
	key, err := ticket.GenerateKey("sim")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := ticket.NewRing([]usher.Key{key})
	if err != nil {
		t.Fatal(err)
	}
	room := cfg.room
	s := &room.Settings
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

	var q eventQueue
	seq := 0
	push := func(at time.Time, v *simVisitor) {
		seq++
		heap.Push(&q, simEvent{at: at, v: v, seq: seq})
	}
	var all []*simVisitor
	for i := range cfg.visitors {
		v := &simVisitor{
			id:     i,
			arrive: start.Add(time.Duration(rng.Int64N(int64(cfg.arrivalSpan)))),
			browse: cfg.browseMin + time.Duration(rng.Int64N(int64(cfg.browseMax-cfg.browseMin)+1)),
			every:  time.Second + time.Duration(rng.Int64N(int64(3*time.Second))),
		}
		if rng.Float64() < cfg.abandonFrac {
			v.patience = time.Duration(rng.Int64N(int64(cmp.Or(cfg.patienceMax, 30*time.Second))))
		}
		all = append(all, v)
		push(v.arrive, v)
	}

	var res simResult
	// truth helpers
	activeAt := func(now time.Time) int {
		n := 0
		for _, v := range all {
			for _, ss := range v.sessions {
				if !now.Before(ss.from) && now.Before(ss.end) {
					n++
				}
			}
		}
		return n
	}
	admittedIn := func(from, to time.Time) int {
		n := 0
		for _, a := range res.admissions {
			if a.After(from) && !a.After(to) {
				n++
			}
		}
		return n
	}
	liveWaiters := func() int {
		n := 0
		for _, v := range all {
			if v.ticket != nil && v.ticket.State == usher.Waiting && !v.abandoned && !v.done {
				n++
			}
		}
		return n
	}

	// Sample utilisation every 250 ms of simulated time.
	nextSample := start
	var freeSum float64
	end := start.Add(cfg.horizon)
	for q.Len() > 0 {
		ev := heap.Pop(&q).(simEvent)
		now := ev.at
		if now.After(end) {
			break
		}
		for !nextSample.After(now) {
			// The store counts exactly the waiting tickets whose cell has
			// not expired, leavers included: a leaver stops counting when
			// the cell its last check-in named expires.
			if st, err := st.Stats(ctx, room.ID, nextSample); err != nil {
				t.Fatal(err)
			} else if want := countedWaiting(all, nil, nextSample, 0); st.Waiting != want {
				t.Fatalf("at %v the store counts %d waiting, the tickets %d", nextSample.Sub(start), st.Waiting, want)
			}
			if liveWaiters() > 0 {
				act := activeAt(nextSample)
				free := min(s.TotalActiveUsers-act, s.NewUsersPerMinute-admittedIn(nextSample.Add(-time.Minute), nextSample))
				freeSum += float64(max(free, 0))
				res.queueSamples++
			}
			nextSample = nextSample.Add(250 * time.Millisecond)
		}
		v := ev.v
		if v.done {
			continue
		}
		// A waiter past its patience gives up: it never comes back.
		if v.ticket != nil && v.ticket.State == usher.Waiting && v.patience > 0 && now.Sub(v.ticket.ArrivedAt) > v.patience {
			v.abandoned, v.done = true, true
			continue
		}
		// A browsing visitor who is done leaves.
		if v.wasAdmitted && now.Sub(v.admitted) > v.browse && !(v.ticket != nil && v.ticket.State == usher.Waiting) {
			v.done = true
			continue
		}
		wasNew := v.ticket == nil || v.ticket.State == usher.Admitted
		if !wasNew {
			res.checkIns++
		}
		sessionHeld := v.inSession(now)
		d, err := eng.Decide(ctx, &room, usher.Visit{Ticket: v.ticket, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if d.TicketChanged {
			// The ticket goes through the real cookie codec, as it would
			// over HTTP (times kept to the millisecond).
			sealed, err := ring.Seal(&d.Ticket, room.ID, room.CookieName())
			if err != nil {
				t.Fatalf("seal: %v", err)
			}
			tk, err := ring.Open(sealed, room.ID, room.CookieName())
			if err != nil {
				t.Fatalf("open: %v", err)
			}
			v.ticket = &tk
		}
		switch d.Outcome {
		case usher.Admit:
			// A session lasts to the end its ticket was counted to: the
			// sessions the room holds are the visitors' tickets.
			switch {
			case d.NewlyAdmitted:
				v.wasAdmitted = true
				v.admitted = now
				res.admissions = append(res.admissions, now)
				res.admitted = append(res.admitted, simAdmission{now, d.Ticket.Bucket()})
				res.admittedCount++
				v.sessions = append(v.sessions, session{from: now, end: d.Ticket.Until})
			case !sessionHeld:
				// Let in without an admission, on a session that ended.
				res.revived++
				v.sessions = append(v.sessions, session{from: now, end: d.Ticket.Until})
			default:
				v.sessions[len(v.sessions)-1].end = d.Ticket.Until
			}
			v.lastReq = now
			if end := v.sessions[len(v.sessions)-1].end; end.Before(now.Add(s.SessionDuration)) && !s.DisableSessionRenewal {
				t.Fatalf("a request at %v left a session ending %v, before session_duration after it", now.Sub(start), end.Sub(start))
			}
			if act := activeAt(now); act > res.maxActive {
				res.maxActive = act
			}
			push(now.Add(v.every), v)
		case usher.Wait:
			if sessionHeld {
				res.requeued++
			}
			if wasNew {
				v.bucket = v.ticket.Bucket()
				v.lastWait = time.Time{}
				if d.Stats.Waiting == 0 && d.Stats.Slots > 0 {
					res.earlyQueued++
				}
			}
			v.lastWait = now
			// The position shown is right as of this check-in: one more than
			// the waiting tickets counted in earlier buckets.
			if want := countedWaiting(all, v, now, v.ticket.Bucket()) + 1; d.Position != want {
				t.Fatalf("at %v visitor %d was shown position %d, %d by the tickets", now.Sub(start), v.id, d.Position, want)
			}
			if d.TicketChanged {
				res.longestWindow = max(res.longestWindow, time.Unix(v.ticket.Cell, 0).Sub(v.ticket.CountedAt))
			}
			if !v.ticket.NextCheckIn.After(now) || v.ticket.NextCheckIn.Sub(now) > time.Unix(v.ticket.Cell, 0).Sub(now) {
				t.Fatalf("at %v visitor %d told to check in at %v, its count ends %v", now.Sub(start), v.id, v.ticket.NextCheckIn.Sub(start), time.Unix(v.ticket.Cell, 0).Sub(start))
			}
			push(v.ticket.NextCheckIn, v)
		default:
			t.Fatalf("unexpected outcome %v", d.Outcome)
		}
	}
	// FIFO inversions: a waiter told to wait at time w although a visitor
	// from a later bucket had been admitted at or before w, while the waiter
	// was already waiting.
	adms := res.admitted
	for _, v := range all {
		if v.lastWait.IsZero() {
			continue
		}
		i := sort.Search(len(adms), func(i int) bool { return adms[i].at.After(v.lastWait) })
		for _, a := range adms[:i] {
			if a.bucket > v.bucket {
				res.inversions++
				if res.inversions <= 3 {
					t.Logf("inversion: visitor %d (bucket %d) told to wait at %v after bucket %d was admitted at %v",
						v.id, v.bucket, v.lastWait.Sub(start), a.bucket, a.at.Sub(start))
				}
				break
			}
		}
	}
	if res.queueSamples > 0 {
		res.utilization = 1 - freeSum/float64(res.queueSamples)/float64(s.TotalActiveUsers)
	}
	return res
}

// countedWaiting returns how many visitors other than self hold a waiting
// ticket whose cell has not expired at now, in buckets before before (0:
// any bucket).
func countedWaiting(all []*simVisitor, self *simVisitor, now time.Time, before int64) int64 {
	n := int64(0)
	for _, u := range all {
		if u == self || u.ticket == nil || u.ticket.State != usher.Waiting || u.ticket.Cell <= now.Unix() {
			continue
		}
		if before == 0 || u.ticket.Bucket() < before {
			n++
		}
	}
	return n
}
