package redis_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/store/redis"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// TestAnalyticsMultiNodeMerge: two nodes, each an engine over its own
// client of one redis-server with its own Recorder, admit visitors of
// one room; their flushes merge in Redis, and either node reads the
// room's totals: arrivals and admissions add up, an admitted visitor's
// further requests count nothing, and the peaks are the shared counts
// the nodes sampled.
func TestAnalyticsMultiNodeMerge(t *testing.T) {
	srv := redistest.StartServer(t)
	pfx := prefix(t)
	room := usher.Room{ID: "sale", Name: "Sale", Settings: usher.Settings{
		TotalActiveUsers: 5, NewUsersPerMinute: 100, SessionDuration: time.Hour, RefreshInterval: 30 * time.Second,
	}}
	type node struct {
		store *redis.Store
		eng   *admission.Engine
		rec   *analytics.Recorder
	}
	var nodes [2]node
	for i := range nodes {
		st := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: pfx})
		rec := analytics.NewRecorder(analytics.Options{Sink: st, Stats: st.Stats, Lapsed: st.Lapsed, Rooms: func() []string { return []string{"sale"} }})
		nodes[i] = node{st, admission.New(st, admission.Options{Observer: rec}), rec}
	}
	ctx := context.Background()
	visit := func(n node, tk *usher.Ticket) usher.Decision {
		t.Helper()
		d, err := n.eng.Decide(ctx, &room, usher.Visit{Ticket: tk, Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Node 0 admits 3, node 1 admits 2; each admitted visitor comes back
	// 10 times, to either node.
	for i, n := range []int{0, 0, 0, 1, 1} {
		d := visit(nodes[n], nil)
		if d.Outcome != usher.Admit {
			t.Fatalf("visitor %d: %v", i, d.Outcome)
		}
		tk := d.Ticket
		for j := range 10 {
			if d := visit(nodes[j%2], &tk); d.Outcome != usher.Admit {
				t.Fatalf("visitor %d request %d: %v", i, j, d.Outcome)
			}
		}
	}
	// The room is full: two more wait, one at each node.
	for n := range nodes {
		if d := visit(nodes[n], nil); d.Outcome != usher.Wait {
			t.Fatalf("a sixth visitor: %v", d.Outcome)
		}
	}
	start := time.Now().Add(-time.Minute)
	for _, n := range nodes {
		n.rec.Sample(ctx)
		if err := n.rec.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range nodes {
		rep, err := analytics.Query(ctx, n.store, "sale", time.Minute, start, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		var sum analytics.Point
		for _, p := range rep.Points {
			sum.Arrivals += p.Arrivals
			sum.Admissions += p.Admissions
			sum.QueueWait.Count += p.QueueWait.Count
			sum.PeakActive = max(sum.PeakActive, p.PeakActive)
			sum.PeakWaiting = max(sum.PeakWaiting, p.PeakWaiting)
		}
		if sum.Arrivals != 7 || sum.Admissions != 5 || sum.QueueWait.Count != 5 || sum.PeakActive != 5 || sum.PeakWaiting != 2 {
			t.Errorf("read by node %d: %+v; want 7 arrivals, 5 admissions (5 queue waits), peak active 5, peak waiting 2", i, sum)
		}
	}
	hours, err := analytics.Query(ctx, nodes[0].store, "sale", time.Hour, start.Add(-time.Hour), time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var adm int64
	for _, p := range hours.Points {
		adm += p.Admissions
	}
	if adm != 5 {
		t.Errorf("hour points hold %d admissions, want 5", adm)
	}
}

// TestAnalyticsPointMemory measures the fullest point a Recorder can
// flush (every bucket of its three histograms) in Redis: MEMORY USAGE of
// its minute key must stay under 48 KB (the local store's bound is
// analytics.MaxPointBytes).
func TestAnalyticsPointMemory(t *testing.T) {
	srv := redistest.StartServer(t)
	st := mustOpen(t, redis.Options{Addrs: []string{srv.Addr()}, KeyPrefix: "mem"})
	d := usher.AnalyticsDelta{Minute: time.Now().UTC().Truncate(time.Minute), Add: map[string]int64{}, Max: map[string]int64{}}
	for _, f := range []string{"arr", "adm", "rev", "end"} {
		d.Add[f] = 1 << 40
	}
	for _, f := range []string{"pw", "pa", "lap", "lapn"} {
		d.Max[f] = 1 << 40
	}
	for i := range analytics.Buckets {
		for _, p := range []string{"q", "o", "e"} {
			d.Add[p+strconv.Itoa(i)] = 1 << 31
		}
	}
	if n := len(d.Add) + len(d.Max); n != analytics.PointFields {
		t.Fatalf("%d fields, want the fullest point's %d", n, analytics.PointFields)
	}
	if err := st.AddAnalytics(context.Background(), "sale", []usher.AnalyticsDelta{d}); err != nil {
		t.Fatal(err)
	}
	key := "{mem:sale}:am:" + strconv.FormatInt(d.Minute.Unix(), 10)
	n, err := strconv.Atoi(srv.Do("MEMORY", "USAGE", key, "SAMPLES", "0"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fullest point in Redis: %d bytes (%d fields)", n, analytics.PointFields)
	if n > 48<<10 {
		t.Errorf("fullest point takes %d bytes in Redis, over 48 KB", n)
	}
	if ttl, _ := strconv.Atoi(srv.Do("TTL", key)); ttl <= 0 || time.Duration(ttl)*time.Second > usher.AnalyticsMinuteKeep+2*time.Minute {
		t.Errorf("minute key TTL %d s, want within the minute retention %v", ttl, usher.AnalyticsMinuteKeep)
	}
}
