package gate_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/gate"
	"github.com/usherhq/usher/internal/store/local"
	"github.com/usherhq/usher/internal/ticket"
)

// featureGate is a gate over the real engine for one room, with options.
func featureGate(t testing.TB, room *usher.Room, now time.Time, opts func(*gate.Options)) (*gate.Gate, *admission.Engine) {
	t.Helper()
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Origin", "1")
		io.WriteString(w, "inside")
	}))
	t.Cleanup(origin.Close)
	room.Origin = origin.URL
	st, err := local.Open(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ring, err := ticket.NewRing([]usher.Key{mustKey(t, "k1")})
	if err != nil {
		t.Fatal(err)
	}
	eng := admission.New(st, admission.Options{})
	o := gate.Options{Rooms: []*usher.Room{room}, Decider: eng, Sealer: ring, Now: func() time.Time { return now },
		Trusted: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}
	if opts != nil {
		opts(&o)
	}
	g, err := gate.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return g, eng
}

func TestBypassRulesByField(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name, expr string
		req        func() *http.Request
	}{
		{"ip in a list", `ip.in_ip_list("office")`, func() *http.Request {
			r := httptest.NewRequest("GET", "http://shop.test/", nil)
			r.RemoteAddr = "192.0.2.10:1234"
			r.Header.Set("X-Forwarded-For", "203.0.113.7")
			return r
		}},
		{"ip in a cidr", `ip.in_cidr("198.51.100.0/24")`, func() *http.Request {
			r := httptest.NewRequest("GET", "http://shop.test/", nil)
			r.RemoteAddr = "198.51.100.9:1234"
			return r
		}},
		{"host", `host == "admin.shop.test"`, func() *http.Request { return httptest.NewRequest("GET", "http://admin.shop.test:8080/", nil) }},
		{"path", `path.startsWith("/api/tickets")`, func() *http.Request { return httptest.NewRequest("GET", "http://shop.test/API/../api/tickets/1", nil) }},
		{"query", `"app" in params["via"]`, func() *http.Request { return httptest.NewRequest("GET", "http://shop.test/?via=web&via=app", nil) }},
		{"method", `method == "OPTIONS"`, func() *http.Request { return httptest.NewRequest("OPTIONS", "http://shop.test/", nil) }},
		{"header", `headers["x-mobile-app"] == "tickets"`, func() *http.Request {
			r := httptest.NewRequest("GET", "http://shop.test/", nil)
			r.Header.Set("X-Mobile-App", "tickets")
			return r
		}},
		{"user agent", `user_agent.contains("Pingdom")`, func() *http.Request {
			r := httptest.NewRequest("GET", "http://shop.test/", nil)
			r.Header.Set("User-Agent", "Pingdom.com_bot_version_1.4")
			return r
		}},
		{"country", `country in ["NZ", "AU"]`, func() *http.Request {
			r := httptest.NewRequest("GET", "http://shop.test/", nil)
			r.Header.Set("CF-IPCountry", "NZ")
			return r
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			room := testRoom("sale")
			room.TotalActiveUsers = 1
			room.Rules = []usher.Rule{{Description: tc.name, Expression: tc.expr, Action: "bypass_waiting_room", Enabled: true}}
			g, eng := featureGate(t, room, now, func(o *gate.Options) {
				o.IPLists = map[string][]netip.Prefix{"office": {netip.MustParsePrefix("203.0.113.0/24")}}
				o.CountryHeader = "CF-IPCountry"
			})
			// Fill the room so that only a bypass gets to the origin.
			g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil))
			for range 3 {
				rec := httptest.NewRecorder()
				g.ServeHTTP(rec, tc.req())
				if rec.Header().Get("X-Origin") != "1" {
					t.Fatalf("not bypassed: %d %s", rec.Code, rec.Body.String()[:min(80, rec.Body.Len())])
				}
				if sc := rec.Header().Get("Set-Cookie"); sc != "" {
					t.Fatalf("a bypassed request got a cookie: %s", sc)
				}
			}
			st, _ := eng.Status(context.Background(), room, now)
			if st.Active != 1 || st.Waiting != 0 {
				t.Fatalf("bypassed requests were counted: %+v", st)
			}
			// The same request without the matching fact waits.
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/", nil))
			if rec.Header().Get("X-Origin") == "1" {
				t.Fatal("a request that matches no rule got past a full room")
			}
		})
	}
}

func TestMalformedRuleFailsTheGate(t *testing.T) {
	room := testRoom("sale")
	room.Rules = []usher.Rule{{Description: "typo", Expression: `hots == "x"`, Action: "bypass_waiting_room", Enabled: true}}
	st, _ := local.Open(local.Options{})
	defer st.Close()
	ring, _ := ticket.NewRing([]usher.Key{mustKey(t, "k1")})
	_, err := gate.New(gate.Options{Rooms: []*usher.Room{room}, Decider: admission.New(st, admission.Options{}), Sealer: ring})
	if err == nil || !strings.Contains(err.Error(), "hots") || !strings.Contains(err.Error(), "typo") {
		t.Fatalf("gate.New with a malformed rule: %v", err)
	}
}

func TestPrequeuePageAndCustomPage(t *testing.T) {
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	room := testRoom("drop")
	room.Name = "Ticket drop"
	room.Events = []usher.Event{{Name: "Spring drop", PrequeueStart: start.Add(-time.Hour), Start: start, End: start.Add(time.Hour)}}
	g, _ := featureGate(t, room, start.Add(-10*time.Minute), nil)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/", nil))
	body := rec.Body.String()
	if rec.Header().Get("X-Origin") == "1" || !strings.Contains(body, "Spring drop") || !strings.Contains(body, `http-equiv="refresh"`) {
		t.Fatalf("pre-queue page: %d\n%s", rec.Code, body)
	}

	dir := t.TempDir()
	page := filepath.Join(dir, "page.html")
	os.WriteFile(page, []byte(`<html><head>{{{usherRefreshMeta}}}</head><body>{{roomName}}: number {{position}}</body></html>`), 0o600)
	custom := testRoom("custom")
	custom.Name = "Brand <Shop>"
	custom.TotalActiveUsers = 1
	custom.CustomPageHTML = page
	g, _ = featureGate(t, custom, start, nil)
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil))
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/", nil))
	if got := rec.Body.String(); !strings.Contains(got, "Brand &lt;Shop&gt;: number 1") || !strings.Contains(got, `http-equiv="refresh"`) {
		t.Fatalf("custom page: %s", got)
	}
}

func TestEventSettingsReachThePage(t *testing.T) {
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	room := testRoom("drop")
	room.TotalActiveUsers = 1
	code, method := 429, usher.Random
	room.Events = []usher.Event{{Name: "lottery", Start: start, End: start.Add(time.Hour),
		Overrides: usher.Overrides{QueueingStatusCode: &code, QueueingMethod: &method}}}
	g, _ := featureGate(t, room, start.Add(time.Minute), nil)
	g.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "http://shop.test/", nil))
	req := httptest.NewRequest("GET", "http://shop.test/", nil)
	req.Header.Set("Accept", "application/json")
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	if rec.Code != 429 || !strings.Contains(rec.Body.String(), `"isRandomQueue":true`) {
		t.Fatalf("during the event: %d %s", rec.Code, rec.Body.String())
	}
	// The room's status shows the event's method too.
	rec = httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://shop.test/__usher/status/drop", nil))
	if !strings.Contains(rec.Body.String(), `"queueing_method":"random"`) {
		t.Fatalf("status during the event: %s", rec.Body.String())
	}
}

func TestCookieDomainAcrossHosts(t *testing.T) {
	room := testRoom("shop")
	room.Routes = []usher.Route{{Host: "www.shop.test", Path: "/"}, {Host: "checkout.shop.test", Path: "/"}}
	g, _ := featureGate(t, room, time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC), nil)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, httptest.NewRequest("GET", "http://www.shop.test/", nil))
	if sc := rec.Header().Get("Set-Cookie"); !strings.Contains(sc, "Domain=shop.test") {
		t.Fatalf("multi-host room cookie: %s", sc)
	}
}
