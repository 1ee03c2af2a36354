package analytics

import (
	"context"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/admission"
)

// TestPriorsLearnedAcrossNodes: two nodes' recorders tell, for waiters
// whose first page was cold, their actual wait and the limits' forecast;
// the store merges them, and every node's Priors reads the same prior:
// the median ratio, clamped. Too few ratios give no prior; ratios of
// waiters whose page was not cold (no forecast) count for nothing.
func TestPriorsLearnedAcrossNodes(t *testing.T) {
	now := t0
	st := memStore(t, &now)
	ctx := context.Background()
	nodes := []*Recorder{
		NewRecorder(Options{Sink: st, Now: func() time.Time { return now }}),
		NewRecorder(Options{Sink: st, Now: func() time.Time { return now }}),
	}
	rooms := []string{"sale", "quiet"}
	admit := func(rec *Recorder, room string, queued, forecast time.Duration) {
		rec.Observe(room, admission.Observation{What: admission.Admitted, At: now, Queued: queued, Announced: forecast, Forecast: forecast})
	}
	// 30 ratios of 1.5 on one node, 30 of 1.5 and 10 of 4 on the other,
	// spread over two hours; 500 admissions with no cold page.
	for i := range 30 {
		now = t0.Add(time.Duration(i) * 4 * time.Minute)
		admit(nodes[0], "sale", 90*time.Second, time.Minute)
		admit(nodes[1], "sale", 3*time.Minute, 2*time.Minute)
	}
	for range 10 {
		admit(nodes[1], "sale", 4*time.Minute, time.Minute)
	}
	for range 500 {
		admit(nodes[0], "sale", time.Minute, 0)
	}
	for range MinLearned - 1 {
		admit(nodes[0], "quiet", 2*time.Minute, time.Minute)
	}
	for _, n := range nodes {
		if err := n.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Learned(ctx, st, "sale", now.Add(-LearnedFor), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if h.Count() != 70 {
		t.Errorf("%d ratios learned, want the 70 of cold pages", h.Count())
	}
	for i := range 2 {
		var p Priors
		if err := p.Refresh(ctx, st, rooms, now); err != nil {
			t.Fatal(err)
		}
		if f, ok := p.Prior("sale"); !ok || f < 1.45 || f > 1.55 {
			t.Errorf("reader %d: prior of sale %v (%v), want the median ratio 1.5 within a bucket", i, f, ok)
		}
		if f, ok := p.Prior("quiet"); ok {
			t.Errorf("reader %d: prior of quiet %v from %d ratios, want none below %d", i, f, MinLearned-1, MinLearned)
		}
	}
	// Ratios past the bounds are clamped.
	for range MinLearned {
		admit(nodes[0], "quiet", 20*time.Minute, time.Minute)
	}
	if err := nodes[0].Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var p Priors
	if err := p.Refresh(ctx, st, rooms, now); err != nil {
		t.Fatal(err)
	}
	if f, ok := p.Prior("quiet"); !ok || f != admission.MaxPrior {
		t.Errorf("prior of quiet %v (%v), want it clamped to %v", f, ok, admission.MaxPrior)
	}
}
