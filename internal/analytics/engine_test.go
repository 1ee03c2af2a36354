package analytics

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

// TestEngineToReport: a real engine over the embedded store, observed by
// a Recorder, on simulated time: a waiter admitted after a queue, and a
// waiter who stops checking in, show up in the report as arrivals,
// admissions with their time in queue and announced-wait error, and one
// abandoned waiter in the minute its place lapsed.
func TestEngineToReport(t *testing.T) {
	now := t0
	st := memStore(t, &now)
	rec := NewRecorder(Options{Sink: st, Stats: st.Stats, Lapsed: st.Lapsed, Rooms: func() []string { return []string{"sale"} },
		Now: func() time.Time { return now }})
	eng := admission.New(st, admission.Options{Observer: rec})
	room := usher.Room{ID: "sale", Name: "Sale", Settings: usher.Settings{
		TotalActiveUsers: 1, NewUsersPerMinute: 60, SessionDuration: 20 * time.Second, RefreshInterval: 5 * time.Second,
	}}
	ctx := context.Background()
	visit := func(tk *usher.Ticket) usher.Decision {
		t.Helper()
		d, err := eng.Decide(ctx, &room, usher.Visit{Ticket: tk, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := visit(nil); d.Outcome != usher.Admit {
		t.Fatalf("first visitor: %v", d.Outcome)
	}
	now = t0.Add(time.Second)
	stays := visit(nil).Ticket // waits, and keeps checking in
	leaves := visit(nil).Ticket
	if stays.State != usher.Waiting || leaves.State != usher.Waiting {
		t.Fatal("the room of one did not make the next two wait")
	}
	rec.Sample(ctx)
	for now.Before(t0.Add(2 * time.Minute)) {
		now = stays.NextCheckIn
		d := visit(&stays)
		stays = d.Ticket
		if d.Outcome == usher.Admit {
			break
		}
		rec.Sample(ctx)
	}
	if stays.State != usher.Admitted {
		t.Fatal("the waiter who stayed was not admitted within two minutes")
	}
	queued := now.Sub(t0.Add(time.Second))
	now = now.Add(time.Minute)
	rec.Sample(ctx)
	if err := rec.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := Query(ctx, st, "sale", time.Minute, t0, now.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var sum Point
	for _, p := range rep.Points {
		sum.Arrivals += p.Arrivals
		sum.Admissions += p.Admissions
		sum.Abandoned += p.Abandoned
	}
	// Both admissions fall in the first minute: one at once, one after
	// the queue.
	q := rep.Points[0].QueueWait
	if sum.Arrivals != 3 || sum.Admissions != 2 || sum.Abandoned != 1 {
		t.Errorf("report totals: %d arrivals, %d admissions, %d abandoned; want 3, 2, 1 (%+v)", sum.Arrivals, sum.Admissions, sum.Abandoned, rep.Points)
	}
	if got := time.Duration(q.P99 * float64(time.Second)); q.Count != 2 || q.P50 != 0 || got < queued*15/16 || got > queued*17/16 {
		t.Errorf("time in queue: %+v, want 0 s and about %v", q, queued)
	}
	if e := rep.Points[0].ETAError; e.P90 <= 0 {
		t.Errorf("eta error %+v: the waiter was announced a wait", e)
	}
}
