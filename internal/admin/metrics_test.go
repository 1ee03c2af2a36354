package admin

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
)

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	h := newTestHandler(t, Options{Metrics: m})
	rec := serve(t, h, "GET", "/metrics", "Bearer "+testToken)
	if rec.Code != http.StatusOK {
		t.Fatalf("scrape status = %d, body %s", rec.Code, rec.Body)
	}
	return rec.Body.String()
}

func TestMetricsExposition(t *testing.T) {
	m := NewMetrics(testRooms, testStatus)
	m.SetLapsed(func(_ context.Context, room string, _ time.Time) (int64, error) { return int64(len(room)) + 13, nil })
	m.ObserveDecision("sale", usher.Admit, 120*time.Microsecond)
	m.ObserveDecision("sale", usher.Wait, 3*time.Millisecond)
	m.ObserveDecision("sale", usher.Wait, 4*time.Millisecond)
	for range 3 {
		m.Observe("sale", admission.Observation{What: admission.Arrived})
	}
	m.Observe("sale", admission.Observation{What: admission.Admitted, Queued: 0})
	m.Observe("sale", admission.Observation{What: admission.Admitted, Queued: 90 * time.Second, Announced: 60 * time.Second})
	m.Observe("sale", admission.Observation{What: admission.Revoked})
	m.Observe("sale", admission.Observation{What: admission.Ended, OnOrigin: 45 * time.Second})
	body := scrape(t, m)

	tests := []struct {
		name string
		want string
	}{
		{"requests admit", `usher_requests_total{outcome="admit",room="sale"} 1`},
		{"requests wait", `usher_requests_total{outcome="wait",room="sale"} 2`},
		{"arrivals", `usher_arrivals_total{room="sale"} 3`},
		{"admissions", `usher_admissions_total{room="sale"} 2`},
		{"revoked", `usher_revoked_sessions_total{room="sale"} 1`},
		{"ended", `usher_ended_sessions_total{room="sale"} 1`},
		{"queue wait count", `usher_queue_wait_seconds_count{room="sale"} 2`},
		{"queue wait at once", `usher_queue_wait_seconds_bucket{room="sale",le="0.5"} 1`},
		{"queue wait 90 s", `usher_queue_wait_seconds_bucket{room="sale",le="60"} 1`},
		{"queue wait 90 s in 120", `usher_queue_wait_seconds_bucket{room="sale",le="120"} 2`},
		{"queue wait sum", `usher_queue_wait_seconds_sum{room="sale"} 90`},
		{"origin time", `usher_origin_time_seconds_bucket{room="sale",le="60"} 1`},
		{"origin time below", `usher_origin_time_seconds_bucket{room="sale",le="30"} 0`},
		{"eta error 33 %", `usher_eta_error_percent_bucket{room="sale",le="50"} 1`},
		{"eta error not 25", `usher_eta_error_percent_bucket{room="sale",le="25"} 0`},
		{"abandoned", `usher_abandoned_waiters_total{room="sale"} 17`},
		{"duration count", `usher_decision_duration_seconds_count{room="sale"} 3`},
		{"duration smallest bucket", `usher_decision_duration_seconds_bucket{room="sale",le="5e-05"} 0`},
		{"duration 250us bucket", `usher_decision_duration_seconds_bucket{room="sale",le="0.00025"} 1`},
		{"duration largest bucket", `usher_decision_duration_seconds_bucket{room="sale",le="1"} 3`},
		{"active", `usher_active_users{room="sale"} 150`},
		{"waiting", `usher_waiting_users{room="sale"} 1234`},
		{"admitted last minute", `usher_admitted_last_minute{room="sale"} 42`},
		{"free slots", `usher_free_slots{room="sale"} 8`},
		{"limit total active", `usher_limit_total_active_users{room="sale"} 200`},
		{"limit per minute", `usher_limit_new_users_per_minute{room="sale"} 50`},
		{"status errors broken", `usher_status_errors_total{room="broken"} 1`},
		{"status errors gone", `usher_status_errors_total{room="gone"} 1`},
		{"go collector", `go_goroutines `},
		{"process collector", `process_start_time_seconds `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(body, tt.want) {
				t.Errorf("exposition lacks %q", tt.want)
			}
		})
	}

	for _, name := range []string{"usher_active_users", "usher_waiting_users", "usher_free_slots", "usher_limit_total_active_users"} {
		t.Run("no gauges for failed room "+name, func(t *testing.T) {
			for _, room := range []string{"broken", "gone"} {
				if s := name + `{room="` + room + `"}`; strings.Contains(body, s) {
					t.Errorf("exposition has %s after a failed status call", s)
				}
			}
		})
	}

	t.Run("errors accumulate across scrapes", func(t *testing.T) {
		body := scrape(t, m)
		if want := `usher_status_errors_total{room="broken"} 2`; !strings.Contains(body, want) {
			t.Errorf("second scrape lacks %q", want)
		}
	})
}

func TestMetricsScrapeTimeout(t *testing.T) {
	rooms := func() []*usher.Room { return []*usher.Room{{ID: "slow"}} }
	status := func(ctx context.Context, _ *usher.Room, _ time.Time) (usher.RoomStats, error) {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("status called without a deadline")
		}
		return usher.RoomStats{}, context.DeadlineExceeded
	}
	body := scrape(t, NewMetrics(rooms, status))
	if want := `usher_status_errors_total{room="slow"} 1`; !strings.Contains(body, want) {
		t.Errorf("exposition lacks %q", want)
	}
}

func TestMetricsNil(t *testing.T) {
	var m *Metrics
	m.ObserveDecision("sale", usher.Admit, time.Millisecond) // must not panic
	m.Observe("sale", admission.Observation{What: admission.Admitted})

	body := scrape(t, NewMetrics(nil, nil))
	if strings.Contains(body, "usher_active_users") {
		t.Error("gauges reported without rooms or status")
	}
}

func TestMetricsConcurrent(t *testing.T) {
	m := NewMetrics(testRooms, testStatus)
	h := newTestHandler(t, Options{Metrics: m})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 50 {
				m.ObserveDecision("sale", usher.Outcome(i%4+1), time.Duration(i)*time.Microsecond)
			}
		})
		wg.Go(func() {
			if rec := serve(t, h, "GET", "/metrics", "Bearer "+testToken); rec.Code != http.StatusOK {
				t.Errorf("scrape status = %d", rec.Code)
			}
		})
	}
	wg.Wait()
}
