package notify

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/draw"
)

// TestMonitorDraws: a shuffle's commitment is told once when it is first
// published (after the first sight), its reveal once at the event's
// start with the secret and the count of entries, never the entries;
// the draws are read only when the room's draws change, not every check.
func TestMonitorDraws(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 60, RefreshInterval: 2 * time.Second}}
	start := t0.Add(30 * time.Second)
	reads := 0
	m := NewMonitor(b, MonitorOptions{
		Rooms: func() []*usher.Room { return []*usher.Room{room} },
		Stats: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) { return usher.RoomStats{}, nil },
		Draws: func(_ context.Context, rm *usher.Room, now time.Time) (draw.Room, error) {
			reads++
			out := draw.Room{Room: rm.ID}
			for _, ev := range rm.Events {
				d := draw.Record{ID: draw.ShuffleID(ev.Start), Kind: draw.KindShuffle, Commitment: "c0ffee"}
				if !now.Before(ev.Start) {
					d.Revealed, d.Secret, d.Seed = true, "5ec2e7", "5eed"
					d.Order = []draw.Placed{{Entry: "e1"}, {Entry: "e2"}}
				}
				out.Draws = append(out.Draws, d)
			}
			return out, nil
		},
	})
	ctx := context.Background()
	s := listen(t, b)
	m.Check(ctx, t0) // first sight: a room without draws
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: t0.Add(10 * time.Second), Start: start, End: start.Add(time.Hour), ShuffleAtStart: true}}
	m.Check(ctx, t0.Add(time.Second))
	got := drain(s)
	if len(got) != 1 || got[0].Type != DrawCommitted {
		t.Fatalf("a shuffle added: %v, want draw.committed", typesOf(got))
	}
	if d := got[0].Data.(map[string]any); d["commitment"] != "c0ffee" || d["id"] != draw.ShuffleID(start) || d["url"] != "/__usher/draws/sale" || d["secret"] != nil {
		t.Fatalf("draw.committed data %v", d)
	}
	for i := 2; i < 30; i++ {
		m.Check(ctx, t0.Add(time.Duration(i)*time.Second))
	}
	if got := typesOf(drain(s)); len(got) != 2 || got[0] != EventPrequeueOpened || got[1] != QueueingStarted {
		t.Fatalf("during the pre-queue: %v, want the pre-queue's events only", got)
	}
	if reads != 1 {
		t.Fatalf("draws read %d times in 29 checks, want once (only when they change)", reads)
	}
	m.Check(ctx, start)
	var revealed []Event
	for _, e := range drain(s) {
		if e.Type == DrawRevealed {
			revealed = append(revealed, e)
		}
	}
	if len(revealed) != 1 {
		t.Fatalf("at the start: %d draw.revealed", len(revealed))
	}
	d := revealed[0].Data.(map[string]any)
	if d["secret"] != "5ec2e7" || d["entries"] != float64(2) || d["order"] != nil {
		t.Fatalf("draw.revealed data %v", d)
	}
	m.Check(ctx, start.Add(time.Second))
	if got := typesOf(drain(s)); len(got) != 0 {
		t.Fatalf("after the reveal: %v", got)
	}
}
