package analytics

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/store/local"
)

var t0 = time.Date(2026, 11, 23, 14, 0, 0, 0, time.UTC)

func memStore(t *testing.T, now *time.Time) *local.Store {
	t.Helper()
	s, err := local.Open(local.Options{Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestRecordersMergeThroughTheStore: two nodes' counts add up, peaks are
// the largest either saw, histograms merge, abandoned waiters are the
// growth of the store's lapsed counter, and hours roll the minutes up.
func TestRecordersMergeThroughTheStore(t *testing.T) {
	now := t0
	st := memStore(t, &now)
	lapsed := map[string]int64{}
	var waiting [2]int64
	node := func(i int) *Recorder {
		return NewRecorder(Options{
			Sink:  st,
			Rooms: func() []string { return []string{"sale"} },
			Stats: func(_ context.Context, room string, _ time.Time) (usher.RoomStats, error) {
				return usher.RoomStats{Waiting: waiting[i], Active: 10 * waiting[i]}, nil
			},
			Lapsed: func(_ context.Context, room string, _ time.Time) (int64, error) { return lapsed[room], nil },
			Now:    func() time.Time { return now },
		})
	}
	a, b := node(0), node(1)
	ctx := context.Background()
	obs := func(r *Recorder, o admission.Observation) { r.Observe("sale", o) }
	// Minute 0: a sees 3 arrivals and 2 admissions, b 2 arrivals and 1.
	for range 3 {
		obs(a, admission.Observation{What: admission.Arrived, At: t0.Add(time.Second)})
	}
	obs(a, admission.Observation{What: admission.Admitted, At: t0.Add(2 * time.Second), Queued: 10 * time.Second, Announced: 8 * time.Second})
	obs(a, admission.Observation{What: admission.Admitted, At: t0.Add(3 * time.Second), Queued: 20 * time.Second, Announced: 20 * time.Second})
	for range 2 {
		obs(b, admission.Observation{What: admission.Arrived, At: t0.Add(4 * time.Second)})
	}
	obs(b, admission.Observation{What: admission.Admitted, At: t0.Add(5 * time.Second), Queued: 40 * time.Second})
	obs(b, admission.Observation{What: admission.Revoked, At: t0.Add(6 * time.Second)})
	obs(b, admission.Observation{What: admission.Ended, At: t0.Add(7 * time.Second), OnOrigin: 90 * time.Second})
	waiting = [2]int64{5, 7}
	now = t0.Add(10 * time.Second)
	lapsed["sale"] = 4
	a.Sample(ctx)
	b.Sample(ctx)
	waiting = [2]int64{9, 2}
	now = t0.Add(20 * time.Second)
	a.Sample(ctx)
	for _, r := range []*Recorder{a, b} {
		if err := r.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Minute 1: 6 more waiters lapsed; an empty flush changes nothing.
	now = t0.Add(70 * time.Second)
	lapsed["sale"] = 10
	a.Sample(ctx)
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	rep, err := Query(ctx, st, "sale", time.Minute, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 2 || rep.Room != "sale" || rep.Step != "minute" {
		t.Fatalf("report %+v, want 2 minute points of sale", rep)
	}
	p := rep.Points[0]
	if p.Arrivals != 5 || p.Admissions != 3 || p.Revoked != 1 || p.PeakWaiting != 9 || p.PeakActive != 90 {
		t.Errorf("minute 0 = %+v", p)
	}
	if p.Abandoned != 0 {
		t.Errorf("minute 0 abandoned = %d; no minute before it to compare with", p.Abandoned)
	}
	if p.QueueWait.Count != 3 || !near(p.QueueWait.P50, 20) || !near(p.QueueWait.P99, 40) {
		t.Errorf("queue wait = %+v, want 3 values, p50 20 s, p99 40 s", p.QueueWait)
	}
	if p.Origin.Count != 1 || !near(p.Origin.P50, 90) {
		t.Errorf("origin = %+v, want one of 90 s", p.Origin)
	}
	// |10-8|/10 = 20 %, |20-20|/20 = 0 %.
	if !near(p.ETAError.P90, 20) || p.ETAError.P50 != 0 {
		t.Errorf("eta error = %+v, want p50 0 %%, p90 20 %%", p.ETAError)
	}
	if q := rep.Points[1]; q.Abandoned != 6 || q.Arrivals != 0 || !q.T.Equal(t0.Add(time.Minute)) {
		t.Errorf("minute 1 = %+v, want 6 abandoned", q)
	}
	hours, err := Query(ctx, st, "sale", time.Hour, t0, t0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(hours.Points) != 1 || hours.Step != "hour" {
		t.Fatalf("hours = %+v", hours)
	}
	if h := hours.Points[0]; h.Arrivals != 5 || h.Admissions != 3 || h.PeakWaiting != 9 || h.QueueWait.Count != 3 {
		t.Errorf("hour = %+v", h)
	}
}

func near(got, want float64) bool { return got >= want*15/16 && got <= want*17/16 }

type failSink struct {
	fail  bool
	calls int
	got   []usher.AnalyticsDelta
}

func (f *failSink) AddAnalytics(_ context.Context, _ string, d []usher.AnalyticsDelta) error {
	f.calls++
	if f.fail {
		return usher.Errorf(usher.EUnavailable, "down")
	}
	f.got = append(f.got, d...)
	return nil
}

// TestFlushKeepsWhatFailedWithinABound: a failed flush keeps its counts
// for the next one, but no more than MaxPending minutes a room.
func TestFlushKeepsWhatFailedWithinABound(t *testing.T) {
	sink := &failSink{fail: true}
	r := NewRecorder(Options{Sink: sink})
	ctx := context.Background()
	for m := range MaxPending + 5 {
		r.Observe("sale", admission.Observation{What: admission.Arrived, At: t0.Add(time.Duration(m) * time.Minute)})
		if err := r.Flush(ctx); err == nil {
			t.Fatal("flush into a failing sink reported no error")
		}
	}
	r.Observe("sale", admission.Observation{What: admission.Arrived, At: t0.Add(time.Duration(MaxPending+4) * time.Minute)})
	sink.fail = false
	if err := r.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if len(sink.got) != MaxPending {
		t.Fatalf("flushed %d minutes, want the last %d", len(sink.got), MaxPending)
	}
	var total int64
	for _, d := range sink.got {
		if d.Minute.Before(t0.Add(5 * time.Minute)) {
			t.Errorf("minute %v kept past the bound", d.Minute)
		}
		total += d.Add[fArrivals]
	}
	if total != MaxPending+1 {
		t.Errorf("arrivals flushed = %d, want %d", total, MaxPending+1)
	}
	if err := r.Flush(ctx); err != nil || len(sink.got) != MaxPending {
		t.Errorf("a flush with nothing new sent %d deltas (%v)", len(sink.got)-MaxPending, err)
	}
}

// TestObserveAllocatesNothing: once a room's minute exists, observing
// allocates nothing.
func TestObserveAllocatesNothing(t *testing.T) {
	r := NewRecorder(Options{Sink: &failSink{}})
	o := admission.Observation{What: admission.Admitted, At: t0, Queued: time.Minute, Announced: 50 * time.Second}
	r.Observe("sale", o)
	if n := testing.AllocsPerRun(1000, func() { r.Observe("sale", o) }); n != 0 {
		t.Errorf("Observe allocates %v", n)
	}
}

// TestStorageBound: the fullest point a Recorder can flush (every bucket
// of every histogram, the largest counts) has at most PointFields fields,
// within the store's limit, and encodes (as the local store does: a length byte, the name, a uvarint) within MaxPointBytes; with the
// retention that bounds a room's analytics by RoomBytes.
func TestStorageBound(t *testing.T) {
	var a minuteAgg
	for i := range Buckets {
		for _, h := range []*Hist{&a.queue, &a.origin, &a.eta} {
			h.AddBucket(i, 1<<40)
		}
	}
	a.arrivals, a.admissions, a.revoked, a.ended = 1<<62, 1<<62, 1<<62, 1<<62
	a.sampled, a.lapSampled, a.peakWait, a.peakActive, a.lapsed = true, true, 1<<62, 1<<62, 1<<62
	d := a.delta(t0)
	if n := len(d.Add) + len(d.Max); n != PointFields || n > usher.AnalyticsMaxFields {
		t.Fatalf("fullest point has %d fields, want PointFields %d (limit %d)", n, PointFields, usher.AnalyticsMaxFields)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	size := 0
	for _, m := range []map[string]int64{d.Add, d.Max} {
		for k, v := range m {
			size += 1 + len(k) + len(binary.AppendUvarint(nil, uint64(v)))
		}
	}
	if size > MaxPointBytes {
		t.Errorf("fullest point: %d bytes of names and values, over MaxPointBytes %d", size, MaxPointBytes)
	}
	points := int(usher.AnalyticsMinuteKeep/time.Minute) + int(usher.AnalyticsHourKeep/time.Hour) + 4
	if RoomBytes != points*MaxPointBytes {
		t.Errorf("RoomBytes = %d, want %d points of %d bytes", RoomBytes, points, MaxPointBytes)
	}
}
