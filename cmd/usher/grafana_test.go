package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/usherhq/usher/internal/admin"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/config"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

// dashboardPath is the Grafana dashboard shipped in docs/.
const dashboardPath = "../../docs/grafana/usher.json"

// registeredMetrics builds a node as serve does (embedded store in
// memory), exercises it (visitors admitted and waiting, a revoke, and the
// observations that take a session's end or a queue's drain), and returns
// the names its registry exposes, histograms' series included.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	cfg, err := config.Parse(strings.NewReader(`listen: 127.0.0.1:0
rooms:
  - id: sale
    name: Sale
    origin: http://127.0.0.1:1
    total_active_users: 2
    new_users_per_minute: 60
`))
	if err != nil {
		t.Fatal(err)
	}
	store, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	layers := admin.NewLayers(store, log)
	n, err := newNode(context.Background(), layers.Start(context.Background(), cfg), log, store, admission.Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	n.metrics.RegisterLayers(layers)
	for range 3 {
		r := httptest.NewRequest("GET", "http://shop.example/", nil)
		r.Header.Set("Accept", "application/json")
		n.handler.ServeHTTP(httptest.NewRecorder(), r)
	}
	room := n.st.rooms()[0]
	if _, err := n.engine.Revoke(context.Background(), room, [8]byte{1}, time.Now()); err != nil {
		t.Fatal(err)
	}
	n.recorder.Observe("sale", admission.Observation{What: admission.Admitted, At: time.Now(), Queued: time.Minute, Announced: 50 * time.Second})
	n.recorder.Observe("sale", admission.Observation{What: admission.Ended, At: time.Now(), OnOrigin: time.Minute})
	names := gatheredNames(t, n)
	// A node on Redis registers its clock's figures too.
	rd := redistest.StartServer(t)
	rcfg := *cfg
	rcfg.Store.Redis = &config.Redis{Addrs: []string{rd.Addr()}, KeyPrefix: "grafana-test"}
	rstore, engineOpts, err := openStore(context.Background(), &rcfg, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rstore.Close() })
	rn, err := newNode(context.Background(), &rcfg, log, rstore, engineOpts)
	if err != nil {
		t.Fatal(err)
	}
	for name := range gatheredNames(t, rn) {
		names[name] = true
	}
	if !names["usher_clock_spread_seconds"] {
		t.Fatal("a node on Redis registers no clock figures")
	}
	return names
}

// gatheredNames returns the metric names n's registry exposes, histograms'
// series included.
func gatheredNames(t *testing.T, n *node) map[string]bool {
	t.Helper()
	fams, err := n.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		names[f.GetName()] = true
		if f.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f.GetName()+s] = true
			}
		}
	}
	return names
}

// promQLNames returns the metric names a PromQL expression reads: its
// identifiers, once strings, label matchers, ranges, grouping clauses,
// Grafana variables and function calls are taken out.
func promQLNames(expr string) []string {
	for _, re := range []string{`"(?:[^"\\]|\\.)*"`, `\{[^}]*\}`, `\[[^\]]*\]`, `\$\{[^}]*\}`, `\$\w+`,
		`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`} {
		expr = regexp.MustCompile(re).ReplaceAllString(expr, " ")
	}
	keywords := map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "bool": true, "and": true,
		"or": true, "unless": true, "offset": true, "group_left": true, "group_right": true, "inf": true, "nan": true}
	var out []string
	re := regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	for _, m := range re.FindAllStringSubmatchIndex(expr, -1) {
		word := strings.TrimSpace(expr[m[0]:m[1]])
		if m[2] >= 0 || keywords[strings.ToLower(word)] {
			continue // a function call or a keyword
		}
		if m[0] > 0 && (expr[m[0]-1] >= '0' && expr[m[0]-1] <= '9' || expr[m[0]-1] == '.') {
			continue // a number's exponent or unit (1e3)
		}
		out = append(out, word)
	}
	return out
}

// dashboardQueries returns every PromQL expression of the dashboard: its
// panels' targets (rows' panels too) and its query variables.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels     []json.RawMessage `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	type panel struct {
		Title   string            `json:"title"`
		Panels  []json.RawMessage `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var out []string
	var walk func([]json.RawMessage)
	walk = func(ps []json.RawMessage) {
		for _, raw := range ps {
			var p panel
			if err := json.Unmarshal(raw, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Targets) == 0 && len(p.Panels) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, tg := range p.Targets {
				if strings.TrimSpace(tg.Expr) == "" {
					t.Errorf("panel %q has a target without an expression", p.Title)
				}
				out = append(out, tg.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			// label_values(metric, label): the metric is what is read.
			if m := regexp.MustCompile(`^label_values\(\s*([^,]+),`).FindStringSubmatch(q); m != nil {
				q = m[1]
			}
			out = append(out, q)
		}
	}
	return out
}

// TestGrafanaDashboardNamesRegisteredMetrics: every query of
// docs/grafana/usher.json reads only metrics a running node registers.
func TestGrafanaDashboardNamesRegisteredMetrics(t *testing.T) {
	names := registeredMetrics(t)
	queries := dashboardQueries(t)
	if len(queries) < 10 {
		t.Fatalf("the dashboard has %d queries; expected its dozen panels", len(queries))
	}
	seen := map[string]bool{}
	for _, q := range queries {
		got := promQLNames(q)
		if len(got) == 0 {
			t.Errorf("query %q names no metric", q)
		}
		for _, name := range got {
			seen[name] = true
			if !names[name] {
				t.Errorf("query %q reads %s, which usher does not register", q, name)
			}
		}
	}
	// The figures the analytics are about are all on the dashboard.
	for _, want := range []string{"usher_admissions_total", "usher_arrivals_total", "usher_abandoned_waiters_total",
		"usher_revoked_sessions_total", "usher_queue_wait_seconds_bucket", "usher_origin_time_seconds_bucket",
		"usher_eta_error_percent_bucket", "usher_requests_total", "usher_waiting_users", "usher_active_users"} {
		if !seen[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// TestPromQLNames: the name extraction finds misspelt names, not
// functions, labels or variables.
func TestPromQLNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.95, sum by (le, room) (rate(usher_queue_wait_seconds_bucket{room=~"$room"}[$__rate_interval])))`: {"usher_queue_wait_seconds_bucket"},
		`sum(rate(usher_admisions_total[5m])) * 60 / usher_limit_new_users_per_minute`:                                         {"usher_admisions_total", "usher_limit_new_users_per_minute"},
		`max by (room) (usher_active_users{room="a b"}) > bool 1e3 offset 5m`:                                                  {"usher_active_users"},
		`a_total / on (room) group_left b`: {"a_total", "b"},
	} {
		if got := promQLNames(expr); !slices.Equal(got, want) {
			t.Errorf("promQLNames(%q) = %q, want %q", expr, got, want)
		}
	}
}
