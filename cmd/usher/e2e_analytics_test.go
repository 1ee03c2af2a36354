package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/usherhq/usher/internal/analytics"
	"github.com/usherhq/usher/internal/store/redis/redistest"
)

const analyticsServeConfig = `listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: write-secret
  tokens:
    - {name: viewer, token: read-secret, role: read}
store:
  embedded:
    path: %s
rooms:
  - id: sale
    name: Big Sale
    origin: %s
    total_active_users: 11
    new_users_per_minute: 100
    session_duration: 5m
    refresh_interval: 20s
    json_response_enabled: true
`

// adminGet reads path on the admin listener with token.
func adminGet(t *testing.T, adm, token, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+adm+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestE2EAdmissionsCountOncePerVisitor: 11 visitors admitted into a room
// of 11, each making 8 requests, and a 12th who waits: the metrics count
// 11 admissions (88 admitted requests under their own name) and 12
// arrivals, and the analytics API, fed by the node's flushes to the
// store, reports the same, with the peaks it sampled.
func TestE2EAdmissionsCountOncePerVisitor(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, fmt.Sprintf(analyticsServeConfig, filepath.Join(dir, "data"), httpServer(t)))
	pub, adm, stop := startMain(t, "serve", "--config", path)
	defer stop()
	start := time.Now().UTC()

	get := func(c *http.Client) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+pub+"/", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return b.String()
	}
	for v := range 11 {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
		for i := range 8 {
			if body := get(c); body != "ok" {
				t.Fatalf("visitor %d request %d: %.200s, want the origin", v, i, body)
			}
		}
	}
	jar, _ := cookiejar.New(nil)
	if body := get(&http.Client{Jar: jar, Timeout: 10 * time.Second}); !strings.Contains(body, `"inWaitingRoom":true`) {
		t.Fatalf("a 12th visitor in a room of 11: %.200s, want the waiting JSON", body)
	}

	code, metrics := adminGet(t, adm, "read-secret", "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		`usher_admissions_total{room="sale"} 11` + "\n",
		`usher_arrivals_total{room="sale"} 12` + "\n",
		`usher_requests_total{outcome="admit",room="sale"} 88` + "\n",
		`usher_requests_total{outcome="wait",room="sale"} 1` + "\n",
		`usher_queue_wait_seconds_count{room="sale"} 11` + "\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	if strings.Contains(metrics, "usher_decisions_total") {
		t.Error("/metrics still has usher_decisions_total")
	}

	// The node flushes every 5 s; the read token reads analytics.
	var sum analytics.Point
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := adminGet(t, adm, "read-secret", "/api/v1/rooms/sale/analytics?from="+start.Add(-time.Minute).Format(time.RFC3339)+"&step=minute")
		if code != http.StatusOK {
			t.Fatalf("analytics: %d %s", code, body)
		}
		var rep analytics.Report
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			t.Fatal(err)
		}
		sum = analytics.Point{}
		for _, p := range rep.Points {
			sum.Arrivals += p.Arrivals
			sum.Admissions += p.Admissions
			sum.QueueWait.Count += p.QueueWait.Count
			sum.PeakActive = max(sum.PeakActive, p.PeakActive)
			sum.PeakWaiting = max(sum.PeakWaiting, p.PeakWaiting)
		}
		if sum.Admissions >= 11 && sum.Arrivals >= 12 && sum.PeakActive >= 11 && sum.PeakWaiting >= 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if sum.Admissions != 11 || sum.Arrivals != 12 || sum.QueueWait.Count != 11 || sum.PeakActive != 11 || sum.PeakWaiting != 1 {
		t.Errorf("analytics: admissions %d, arrivals %d, queue waits %d, peak active %d, peak waiting %d; want 11, 12, 11, 11, 1",
			sum.Admissions, sum.Arrivals, sum.QueueWait.Count, sum.PeakActive, sum.PeakWaiting)
	}

	// The CLI verb prints the same totals (arrived, admitted, abandoned,
	// revoked, peak waiting, peak active).
	code, out, errOut := cli(t, adm, "read-secret", "analytics", "sale", "--since", "10m")
	if code != 0 || !regexp.MustCompile(`TOTAL\s+12\s+11\s+0\s+0\s+1\s+11\s`).MatchString(out) {
		t.Errorf("usher analytics: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("usher analytics sale --since 10m:\n%s", out)
	for _, bad := range [][]string{{"analytics", "sale", "--since", "-1h"}, {"analytics", "sale", "--step", "day"}, {"analytics"}} {
		if code, _, errOut := cli(t, adm, "read-secret", bad...); code != 2 || errOut == "" {
			t.Errorf("usher %q: exit %d (%s), want 2 with a message", bad, code, errOut)
		}
	}
	if code, _, errOut := cli(t, adm, "read-secret", "analytics", "nope"); code != 1 || !strings.Contains(errOut, "no room") {
		t.Errorf("usher analytics nope: exit %d (%s), want 1 naming the room", code, errOut)
	}
}

const analyticsRedisConfig = `listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: write-secret
store:
  redis:
    addrs: [%s]
    key_prefix: %s
rooms:
  - id: sale
    name: Big Sale
    origin: %s
    total_active_users: 20
    new_users_per_minute: 100
    json_response_enabled: true
`

// TestE2EAnalyticsMergeAcrossRedisNodes: two nodes on one redis-server
// admit 6 and 5 visitors (each making 5 requests); each node's metrics
// count its own, and the analytics either node serves are the merged 11.
func TestE2EAnalyticsMergeAcrossRedisNodes(t *testing.T) {
	rd := redistest.StartServer(t)
	origin := httpServer(t)
	var pubs, adms []string
	for range 2 {
		path := writeConfig(t, fmt.Sprintf(analyticsRedisConfig, rd.Addr(), "merge", origin))
		pub, adm, stop := startMain(t, "serve", "--config", path)
		defer stop()
		pubs, adms = append(pubs, pub), append(adms, adm)
	}
	start := time.Now().UTC()
	for i, n := range []int{6, 5} {
		for v := range n {
			jar, _ := cookiejar.New(nil)
			c := &http.Client{Jar: jar, Timeout: 10 * time.Second}
			for r := range 5 {
				resp, err := c.Get("http://" + pubs[i] + "/")
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(b) != "ok" {
					t.Fatalf("node %d visitor %d request %d: %.200s, want the origin", i, v, r, b)
				}
			}
		}
	}
	for i, want := range []string{`usher_admissions_total{room="sale"} 6`, `usher_admissions_total{room="sale"} 5`} {
		if _, m := adminGet(t, adms[i], "write-secret", "/metrics"); !strings.Contains(m, want+"\n") {
			t.Errorf("node %d's /metrics lacks %q", i, want)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; {
		code, body := adminGet(t, adms[i%2], "write-secret", "/api/v1/rooms/sale/analytics?from="+start.Add(-time.Minute).Format(time.RFC3339))
		if code != http.StatusOK {
			t.Fatalf("analytics: %d %s", code, body)
		}
		var rep analytics.Report
		if err := json.Unmarshal([]byte(body), &rep); err != nil {
			t.Fatal(err)
		}
		var adm, arr int64
		for _, p := range rep.Points {
			adm += p.Admissions
			arr += p.Arrivals
		}
		if adm == 11 && arr == 11 {
			i++
			if i == 2 {
				return // both nodes serve the merged figures
			}
			continue
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d's analytics: %d admissions, %d arrivals after 30 s; want 11 and 11", i%2, adm, arr)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
