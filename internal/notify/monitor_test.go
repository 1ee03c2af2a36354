package notify

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// listen subscribes a test subscriber to every room event.
func listen(t *testing.T, b *Bus) *subscriber {
	t.Helper()
	s := &subscriber{ch: make(chan *streamItem, 100), gone: make(chan struct{})}
	if err := b.subscribe(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// drain returns the events the subscriber holds.
func drain(s *subscriber) []Event {
	var out []Event
	for {
		select {
		case it := <-s.ch:
			var e Event
			_ = json.Unmarshal(it.body, &e)
			out = append(out, e)
		default:
			return out
		}
	}
}

func typesOf(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// TestMonitor: queueing starts with queue_all and with waiters and stops
// without them; an event's pre-queue, start and end; one summary a
// minute with the peaks and this node's counts; nothing while nobody
// listens.
func TestMonitor(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 60}}
	room.Events = []usher.Event{{Name: "drop", PrequeueStart: t0.Add(10 * time.Second), Start: t0.Add(20 * time.Second), End: t0.Add(30 * time.Second)}}
	var stats usher.RoomStats
	m := NewMonitor(b, MonitorOptions{
		Rooms: func() []*usher.Room { return []*usher.Room{room} },
		Stats: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) { return stats, nil },
	})
	ctx := context.Background()
	m.Check(ctx, t0) // nobody listens: nothing kept
	s := listen(t, b)
	m.Check(ctx, t0.Add(time.Second)) // first sight
	if got := drain(s); len(got) != 0 {
		t.Fatalf("first check published %v", typesOf(got))
	}
	room.QueueAll = true
	m.Check(ctx, t0.Add(2*time.Second))
	got := drain(s)
	if len(got) != 1 || got[0].Type != QueueingStarted || got[0].Room != "sale" || !got[0].Time.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("after queue_all: %+v", got)
	}
	if d := got[0].Data.(map[string]any); d["reason"] != "queue_all" {
		t.Errorf("queueing.started data %v, want reason queue_all", d)
	}
	m.Check(ctx, t0.Add(3*time.Second))
	if got := drain(s); len(got) != 0 {
		t.Fatalf("no change published %v", typesOf(got))
	}
	room.QueueAll = false
	stats = usher.RoomStats{Waiting: 3, Active: 10}
	m.CountVisit("sale", true, false)
	m.CountVisit("sale", true, true)
	m.CountVisit("nosuch", true, true)
	m.Check(ctx, t0.Add(4*time.Second)) // still queueing: waiters
	if got := drain(s); len(got) != 0 {
		t.Fatalf("queue_all off with waiters published %v", typesOf(got))
	}
	stats = usher.RoomStats{Active: 7, Slots: 3}
	m.Check(ctx, t0.Add(5*time.Second))
	got = drain(s)
	if len(got) != 1 || got[0].Type != QueueingStopped {
		t.Fatalf("without waiters: %v", typesOf(got))
	}
	if d := got[0].Data.(map[string]any); d["lasted_seconds"] != 3.0 {
		t.Errorf("queueing.stopped data %v, want lasted_seconds 3", d)
	}
	m.Check(ctx, t0.Add(11*time.Second)) // pre-queue: queueing again
	if got := typesOf(drain(s)); len(got) != 2 || got[0] != EventPrequeueOpened || got[1] != QueueingStarted {
		t.Fatalf("pre-queue: %v", got)
	}
	m.Check(ctx, t0.Add(21*time.Second))
	if got := typesOf(drain(s)); len(got) != 2 || got[0] != EventStarted || got[1] != QueueingStopped {
		t.Fatalf("start: %v", got)
	}
	m.Check(ctx, t0.Add(31*time.Second))
	if got := typesOf(drain(s)); len(got) != 1 || got[0] != EventEnded {
		t.Fatalf("end: %v", got)
	}
	stats = usher.RoomStats{Active: 2, AdmittedLastMinute: 9}
	m.Check(ctx, t0.Add(61*time.Second))
	got = drain(s)
	if len(got) != 1 || got[0].Type != SummaryMinute {
		t.Fatalf("next minute: %v", typesOf(got))
	}
	d := got[0].Data.(map[string]any)
	if d["minute"] != "2026-12-01T09:00:00Z" || d["waiting_peak"] != 3.0 || d["active_peak"] != 10.0 || d["arrivals"] != 2.0 ||
		d["admissions"] != 1.0 || d["queueing"] != false || d["samples"] != 8.0 {
		t.Errorf("summary %v", d)
	}
	if c := d["counters"].(map[string]any); c["admitted_last_minute"] != 9.0 || c["active"] != 2.0 {
		t.Errorf("summary counters %v", c)
	}
}

// TestMonitorReporter: on a shared store only the node that claimed the
// window publishes, but every node keeps the rooms' state.
func TestMonitorReporter(t *testing.T) {
	b := New(Options{})
	defer b.Close()
	room := &usher.Room{ID: "sale", Settings: usher.Settings{TotalActiveUsers: 10, NewUsersPerMinute: 60}}
	claims := map[string]bool{}
	won := false
	m := NewMonitor(b, MonitorOptions{
		Rooms: func() []*usher.Room { return []*usher.Room{room} },
		Stats: func(context.Context, *usher.Room, time.Time) (usher.RoomStats, error) { return usher.RoomStats{}, nil },
		Claim: func(_ context.Context, key string, until time.Time) bool {
			claims[key] = true
			return won
		},
	})
	s := listen(t, b)
	ctx := context.Background()
	m.Check(ctx, t0)
	room.QueueAll = true
	m.Check(ctx, t0.Add(time.Second)) // another node reports this window
	if got := drain(s); len(got) != 0 {
		t.Fatalf("a node that lost the claim published %v", typesOf(got))
	}
	won = true
	room.QueueAll = false
	m.Check(ctx, t0.Add(2*time.Second)) // same window: no second claim
	if got := drain(s); len(got) != 0 || len(claims) != 1 {
		t.Fatalf("same window: published %v, claims %v", typesOf(got), claims)
	}
	room.QueueAll = true
	m.Check(ctx, t0.Add(ReporterWindow))
	if got := typesOf(drain(s)); len(got) != 1 || got[0] != QueueingStarted || len(claims) != 2 {
		t.Fatalf("next window, claimed: %v, claims %v", got, claims)
	}
}
