package admission

import (
	"sort"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

func eventRoom(shuffle bool) usher.Room {
	room := simRoom()
	room.TotalActiveUsers = 5
	room.SessionDuration = 10 * time.Second
	room.DisableSessionRenewal = true
	room.Events = []usher.Event{{
		Name: "drop", PrequeueStart: t0, Start: t0.Add(20 * time.Second), End: t0.Add(10 * time.Minute),
		ShuffleAtStart: shuffle,
	}}
	return room
}

type preVisitor struct {
	arrival int // order of arrival
	at      time.Time
	tk      *usher.Ticket
	in      time.Time
	waited  time.Time // the last time it was told to wait
}

// runPrequeue has n visitors arrive during the pre-queue and m more after
// the start, all checking in when told, and returns them once all are in.
func runPrequeue(t *testing.T, seed uint64, room usher.Room, n, m int) []*preVisitor {
	t.Helper()
	e := newEngine(t)
	e.rng = newRand(seed)
	start := room.Events[0].Start
	var vs []*preVisitor
	for i := range n {
		vs = append(vs, &preVisitor{arrival: i, at: t0.Add(time.Duration(i) * 19 * time.Second / time.Duration(n))})
	}
	for i := range m {
		vs = append(vs, &preVisitor{arrival: n + i, at: start.Add(time.Second + time.Duration(i)*time.Millisecond)})
	}
	for now := t0; now.Before(start.Add(10 * time.Minute)); now = now.Add(50 * time.Millisecond) {
		waiting := 0
		for _, v := range vs {
			if !v.in.IsZero() {
				continue
			}
			waiting++
			if v.at.After(now) || (v.tk != nil && v.tk.NextCheckIn.After(now)) {
				continue
			}
			d := decide(t, e, &room, v.tk, now)
			if now.Before(start) && (d.Outcome != usher.Wait || d.Phase != usher.Prequeue) {
				t.Fatalf("before the start: %v phase %v, want waiting in the pre-queue", d.Outcome, d.Phase)
			}
			v.tk = &d.Ticket
			if d.Outcome == usher.Admit {
				v.in = now
			} else {
				v.waited = now
			}
		}
		if waiting == 0 {
			return vs
		}
	}
	t.Fatal("the queue did not drain")
	return nil
}

func TestPrequeueAdmitsNobodyBeforeTheStart(t *testing.T) {
	room := eventRoom(false)
	room.TotalActiveUsers = 1000
	e := newEngine(t)
	d := decide(t, e, &room, nil, t0.Add(19*time.Second))
	if d.Outcome != usher.Wait || d.Phase != usher.Prequeue || !d.WaitKnown || d.EstimatedWait != time.Second {
		t.Fatalf("pre-queue with free slots: %v phase %v wait %v, want waiting 1s to the start", d.Outcome, d.Phase, d.EstimatedWait)
	}
	// Its next check-in, at or after the start, goes in.
	at := d.Ticket.NextCheckIn
	if start := t0.Add(20 * time.Second); at.Before(start) {
		at = start
	}
	if d := decide(t, e, &room, &d.Ticket, at); d.Outcome != usher.Admit {
		t.Fatalf("at its check-in %v after the start: %v, want admitted", at.Sub(t0), d.Outcome)
	}
}

func TestPrequeueGoesFirstInArrivalOrder(t *testing.T) {
	vs := runPrequeue(t, 1, eventRoom(false), 30, 20)
	for _, v := range vs[:30] {
		for _, late := range vs[30:] {
			if late.in.Before(v.in) {
				t.Fatalf("post-start arrival %d went in at %v before pre-queued %d at %v", late.arrival, late.in, v.arrival, v.in)
			}
		}
	}
	// Without shuffle, by arrival second: nobody is told to wait after
	// someone who arrived in a later second went in.
	for _, a := range vs[:30] {
		for _, b := range vs[:30] {
			if a.tk.Bucket() < b.tk.Bucket() && !a.waited.Before(b.in) {
				t.Fatalf("pre-queued %d told to wait at %v after later arrival %d went in at %v", a.arrival, a.waited, b.arrival, b.in)
			}
		}
	}
}

func TestPrequeueShuffleIsUniform(t *testing.T) {
	// Over many runs, a visitor's arrival position tells nothing of its
	// admission position: the contingency table of arrival quarter against
	// admission quarter is flat (chi-square, 9 degrees of freedom).
	const n = 40
	var table [4][4]int
	for seed := uint64(1); seed <= 30; seed++ {
		vs := runPrequeue(t, seed, eventRoom(true), n, 10)
		pre := append([]*preVisitor(nil), vs[:n]...)
		for _, v := range pre {
			for _, late := range vs[n:] {
				if late.in.Before(v.in) {
					t.Fatalf("seed %d: post-start arrival went in before a pre-queued visitor", seed)
				}
			}
		}
		sort.SliceStable(pre, func(i, j int) bool {
			if pre[i].in.Equal(pre[j].in) {
				return pre[i].tk.Bucket() < pre[j].tk.Bucket()
			}
			return pre[i].in.Before(pre[j].in)
		})
		for rank, v := range pre {
			table[v.arrival*4/n][rank*4/n]++
		}
	}
	var obs []int
	for _, row := range table {
		obs = append(obs, row[:]...)
	}
	if x := chiSquare(obs); x > 30.58 { // 15 cells against a flat table: p = 0.01 at 15 df
		t.Fatalf("arrival quarter x admission quarter %v: chi-square %.2f, not uniform", table, x)
	}
	t.Logf("arrival quarter x admission quarter: %v", table)
}
