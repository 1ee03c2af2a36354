package local

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/usherhq/usher"
)

// TestAnalyticsRetention: minute points go after AnalyticsMinuteKeep and
// hour points after AnalyticsHourKeep, by the store's clock, in the file
// and in memory; a month of flushes leaves at most the points retention
// allows.
func TestAnalyticsRetention(t *testing.T) {
	for _, file := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "file"}[file], func(t *testing.T) {
			t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			now := t0
			opts := Options{Now: func() time.Time { return now }}
			if file {
				opts.Path = filepath.Join(t.TempDir(), "usher.db")
			}
			s, err := Open(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			add := func(m time.Time) {
				t.Helper()
				if err := s.AddAnalytics(ctx, "sale", []usher.AnalyticsDelta{{Minute: m, Add: map[string]int64{"arr": 1}}}); err != nil {
					t.Fatal(err)
				}
			}
			count := func(step time.Duration) int {
				t.Helper()
				ps, err := s.ReadAnalytics(ctx, "sale", step, t0.Add(-365*24*time.Hour), now.Add(time.Hour))
				if err != nil {
					t.Fatal(err)
				}
				return len(ps)
			}
			add(t0)
			if err := s.AddAnalytics(ctx, "gone", []usher.AnalyticsDelta{{Minute: t0, Add: map[string]int64{"arr": 1}}}); err != nil {
				t.Fatal(err)
			}
			now = t0.Add(usher.AnalyticsMinuteKeep + 2*time.Minute)
			add(now.Truncate(time.Minute))
			if n := count(time.Minute); n != 1 {
				t.Errorf("minutes after the minute retention = %d, want 1 (t0's gone)", n)
			}
			if n := count(time.Hour); n != 2 {
				t.Errorf("hours = %d, want 2", n)
			}
			// A month of flushes, one every ten minutes.
			for now = now.Add(10 * time.Minute); now.Before(t0.Add(35 * 24 * time.Hour)); now = now.Add(10 * time.Minute) {
				add(now.Truncate(time.Minute))
			}
			if n, most := count(time.Minute), int(usher.AnalyticsMinuteKeep/(10*time.Minute))+2; n > most || n < most-3 {
				t.Errorf("minutes kept = %d, want about %d", n, most)
			}
			if n, most := count(time.Hour), int(usher.AnalyticsHourKeep/time.Hour)+2; n > most || n < most-3 {
				t.Errorf("hours kept = %d, want about %d", n, most)
			}
			// A room that no longer flushes (gone from the config) is
			// pruned too, by the hourly sweep of the others' flushes.
			if ps, err := s.ReadAnalytics(ctx, "gone", time.Hour, t0.Add(-time.Hour), now); err != nil || len(ps) != 0 {
				t.Errorf("a room without flushes keeps %d hour points past the retention (%v)", len(ps), err)
			}
		})
	}
}
