package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/store/local"
)

// analyticsHandler returns a handler over a store holding two minutes of
// sale's analytics, starting at the hour before testNow, and the tokens
// "reader" (read only) and testToken.
func analyticsHandler(t *testing.T) *Handler {
	t.Helper()
	now := testNow
	st, err := local.Open(local.Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rec := analytics.NewRecorder(analytics.Options{Sink: st, Now: func() time.Time { return now }})
	h0 := testNow.Add(-time.Hour)
	for i := range 4 {
		rec.Observe("sale", admission.Observation{What: admission.Arrived, At: h0.Add(time.Duration(i) * time.Second)})
	}
	rec.Observe("sale", admission.Observation{What: admission.Admitted, At: h0.Add(5 * time.Second), Queued: 30 * time.Second, Announced: 25 * time.Second})
	rec.Observe("sale", admission.Observation{What: admission.Arrived, At: h0.Add(70 * time.Second)})
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return newTestHandler(t, Options{Analytics: st, Tokens: []Token{{Name: "dash", Secret: "reader"}}})
}

func TestAnalyticsAPI(t *testing.T) {
	h := analyticsHandler(t)
	h0 := testNow.Add(-time.Hour)
	q := url.Values{"from": {h0.Format(time.RFC3339)}, "to": {h0.Add(time.Hour).Format(time.RFC3339)}}
	rec := serve(t, h, "GET", "/api/v1/rooms/sale/analytics?"+q.Encode()+"&step=minute", "Bearer reader")
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	// The exact shape the dashboard reads.
	var raw map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	if raw["room"] != "sale" || raw["step"] != "minute" {
		t.Errorf("room, step = %v, %v", raw["room"], raw["step"])
	}
	points, _ := raw["points"].([]any)
	if len(points) != 2 {
		t.Fatalf("points = %v, want 2", raw["points"])
	}
	p0 := points[0].(map[string]any)
	for _, k := range []string{"t", "arrivals", "admissions", "abandoned", "revoked", "peak_waiting", "peak_active", "queue_wait_seconds", "origin_seconds", "eta_error_pct"} {
		if _, ok := p0[k]; !ok {
			t.Errorf("point lacks %q: %v", k, p0)
		}
	}
	for _, k := range []string{"p50", "p75", "p95", "p99", "count"} {
		if _, ok := p0["queue_wait_seconds"].(map[string]any)[k]; !ok {
			t.Errorf("queue_wait_seconds lacks %q", k)
		}
		if _, ok := p0["origin_seconds"].(map[string]any)[k]; !ok {
			t.Errorf("origin_seconds lacks %q", k)
		}
	}
	for _, k := range []string{"p50", "p90"} {
		if _, ok := p0["eta_error_pct"].(map[string]any)[k]; !ok {
			t.Errorf("eta_error_pct lacks %q", k)
		}
	}
	rep := MustDecode[analytics.Report](t, rec)
	if got := rep.Points[0]; got.T != h0 || got.Arrivals != 4 || got.Admissions != 1 || got.QueueWait.Count != 1 ||
		got.QueueWait.P50 < 28 || got.QueueWait.P50 > 32 || got.ETAError.P50 < 15 || got.ETAError.P50 > 18 {
		t.Errorf("minute 0 = %+v, want 4 arrivals, 1 admission after about 30 s, error about 16 %%", got)
	}
	if got := rep.Points[1]; got.Arrivals != 1 || !got.T.Equal(h0.Add(time.Minute)) {
		t.Errorf("minute 1 = %+v", got)
	}

	hours := MustDecode[analytics.Report](t, serve(t, h, "GET", "/api/v1/rooms/sale/analytics?step=hour", "Bearer reader"))
	if hours.Step != "hour" || len(hours.Points) != 1 || hours.Points[0].Arrivals != 5 {
		t.Errorf("default hour range = %+v, want one hour of 5 arrivals", hours)
	}
	// No data: an empty list, not null.
	if rec := serve(t, h, "GET", "/api/v1/rooms/broken/analytics", "Bearer reader"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"points":[]`) {
		t.Errorf("empty room: %d %s", rec.Code, rec.Body)
	}
}

func TestAnalyticsAPIBadInput(t *testing.T) {
	h := analyticsHandler(t)
	for _, tt := range []struct {
		query, field string
	}{
		{"step=second", "step"},
		{"step=", ""},
		{"from=yesterday", "from"},
		{"to=2026-13-01T00:00:00Z", "to"},
		{"from=2026-03-01T12:00:00Z&to=2026-03-01T11:00:00Z", "from"},
		{"from=2026-03-01T11:00:00Z&to=2026-03-01T11:00:00Z", "from"},
		{"from=2026-02-01T00:00:00Z&to=2026-03-01T00:00:00Z", "from"},
		{"from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&step=hour", "from"},
	} {
		rec := serve(t, h, "GET", "/api/v1/rooms/sale/analytics?"+tt.query, "Bearer reader")
		if tt.field == "" {
			if rec.Code != http.StatusOK {
				t.Errorf("%s: status %d, want 200 (an empty step is the default)", tt.query, rec.Code)
			}
			continue
		}
		e := MustDecode[errorJSON](t, rec)
		if rec.Code != http.StatusBadRequest || e.Error.Field != tt.field || e.Error.Code != usher.EInvalid || !strings.HasPrefix(e.Error.Message, tt.field+": ") {
			t.Errorf("%s: %d %+v, want 400 naming %s", tt.query, rec.Code, e, tt.field)
		}
	}
	if rec := serve(t, h, "GET", "/api/v1/rooms/nope/analytics", "Bearer reader"); rec.Code != http.StatusNotFound {
		t.Errorf("unknown room: %d", rec.Code)
	}
	if rec := serve(t, h, "GET", "/api/v1/rooms/sale/analytics", ""); rec.Code != http.StatusUnauthorized {
		t.Errorf("no token: %d", rec.Code)
	}
	if rec := serve(t, newTestHandler(t, Options{}), "GET", "/api/v1/rooms/sale/analytics", "Bearer "+testToken); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("no analytics: %d", rec.Code)
	}
}
