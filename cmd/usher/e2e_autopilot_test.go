package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestE2EAutopilotServe: usher serve with autopilot on a room, in front of
// a real origin that turns slow. The governor learns the baseline from the
// proxied answers (pooled through the store), halves the effective limits
// within seconds of the slowdown, and says so in the status JSON and the
// metrics.
func TestE2EAutopilotServe(t *testing.T) {
	var delay atomic.Int64
	delay.Store(int64(2 * time.Millisecond))
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration(delay.Load()))
		io.WriteString(w, "ok")
	}))
	defer origin.Close()
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`listen: 127.0.0.1:0
admin:
  listen: 127.0.0.1:0
  token: secret
store:
  embedded:
    path: %s
rooms:
  - id: sale
    origin: %s
    total_active_users: 1000
    new_users_per_minute: 600
    autopilot:
      concurrency: true
      baseline_samples: 5
      min_new_users_per_minute: 1
      min_total_active_users: 1
`, dir, origin.URL))
	pub, adm, stop := startMain(t, "serve", "--config", cfg)
	defer stop()

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		jar, _ := cookiejar.New(nil)
		c := &http.Client{Jar: jar, Timeout: 5 * time.Second}
		wg.Go(func() {
			for ctx.Err() == nil {
				if resp, err := c.Get("http://" + pub + "/item"); err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()

	type apStatus struct {
		NewUsersPerMinute int `json:"new_users_per_minute"`
		TotalActiveUsers  int `json:"total_active_users"`
		Autopilot         *struct {
			Enabled                     bool    `json:"enabled"`
			ConfiguredNewUsersPerMinute int     `json:"configured_new_users_per_minute"`
			Learning                    bool    `json:"learning"`
			BaselineSeconds             float64 `json:"baseline_seconds"`
			Changes                     int     `json:"changes"`
			Last                        *struct {
				Direction string `json:"direction"`
				Reason    string `json:"reason"`
				ToRate    int    `json:"to_new_users_per_minute"`
			} `json:"last_change"`
		} `json:"autopilot"`
	}
	status := func() apStatus {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+adm+"/v1/rooms/sale/status", nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st apStatus
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		if st.Autopilot == nil {
			t.Fatal("the status of a governed room has no autopilot")
		}
		return st
	}
	statusText := func() string {
		req, _ := http.NewRequest("GET", "http://"+adm+"/v1/rooms/sale/status", nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	// Learn the baseline.
	deadline := time.Now().Add(30 * time.Second)
	for status().Autopilot.Learning {
		if time.Now().After(deadline) {
			t.Fatal("the baseline is still being learned after 30 s of traffic")
		}
		time.Sleep(500 * time.Millisecond)
	}
	st := status()
	// Nobody waits: the governor holds what is in use (the four visitors),
	// within [floor, ceiling].
	// (Visitors who wait while it starts from the floor make it step up.)
	if (st.Autopilot.Last != nil && st.Autopilot.Last.Direction != "up") || st.NewUsersPerMinute < 1 || st.NewUsersPerMinute > 600 || st.TotalActiveUsers < 1 || st.TotalActiveUsers > 1000 {
		t.Fatalf("on a healthy origin: %+v, last change %+v; want none down, within the bounds", st, st.Autopilot.Last)
	}
	for st.NewUsersPerMinute < 2 || st.TotalActiveUsers < 2 {
		// From the floor of 1, the visitors who wait make it step up.
		if time.Now().After(deadline.Add(30 * time.Second)) {
			t.Fatalf("the limits stay at the floor with visitors waiting: %s", statusText())
		}
		time.Sleep(500 * time.Millisecond)
		st = status()
	}
	r0, c0 := st.NewUsersPerMinute, st.TotalActiveUsers
	if b := st.Autopilot.BaselineSeconds; b <= 0 || b > 0.1 {
		t.Errorf("baseline %v s, want the origin's few ms", b)
	}
	// The origin slows down a hundredfold.
	delay.Store(int64(250 * time.Millisecond))
	slowed := time.Now()
	for {
		st = status()
		if l := st.Autopilot.Last; l != nil && l.Direction == "down" {
			break
		}
		if time.Since(slowed) > 15*time.Second {
			t.Fatalf("no decrease 15 s after the origin slowed down: %s", statusText())
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("first change %v after the slowdown", time.Since(slowed).Round(100*time.Millisecond))
	l := st.Autopilot.Last
	if l == nil || l.Direction != "down" || l.Reason != "latency" || st.NewUsersPerMinute >= r0 || st.TotalActiveUsers >= c0 {
		t.Fatalf("after the slowdown: %+v, last %+v; want down for latency below %d and %d", st, l, r0, c0)
	}
	// The status shows the governor's change as soon as it is decided; the
	// metrics and the audit record follow from its OnChange, a store write
	// later. Both must show it within a few seconds.
	var problems []string
	for wait := time.Now().Add(5 * time.Second); ; {
		problems = autopilotRecords(t, adm)
		if len(problems) == 0 || time.Now().After(wait) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, p := range problems {
		t.Error(p)
	}
}

// autopilotRecords reads usher's metrics and audit log on adm and says
// what they lack of a decrease for latency in room sale: the metrics'
// change counter and the autopilot's figures, and an audit entry by the
// token named autopilot with the figures before and after and its reason.
func autopilotRecords(t *testing.T, adm string) []string {
	t.Helper()
	var problems []string
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", "http://"+adm+path, nil)
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return b
	}
	body := get("/metrics")
	for _, want := range []string{
		`usher_autopilot_changes_total{direction="down",reason="latency",room="sale"}`,
		`usher_autopilot_rate{room="sale"}`,
		`usher_autopilot_concurrency{room="sale"}`,
	} {
		if !strings.Contains(string(body), want) {
			problems = append(problems, fmt.Sprintf("metrics lack %s", want))
		}
	}
	var audit struct {
		Entries []struct {
			Version int64          `json:"version"`
			Token   string         `json:"token"`
			Action  string         `json:"action"`
			Target  string         `json:"target"`
			Before  map[string]int `json:"before"`
			After   map[string]int `json:"after"`
			Reason  string         `json:"reason"`
		} `json:"entries"`
	}
	if err := json.Unmarshal(get("/api/v1/audit?room=sale"), &audit); err != nil {
		t.Fatal(err)
	}
	var down bool
	for _, e := range audit.Entries {
		if e.Action != "autopilot.change" || e.Token != "autopilot" || e.Target != "rooms/sale" || e.Version <= 0 || !slices.ContainsFunc([]string{"latency:", "latency_target:", "errors:", "recovered:"}, func(r string) bool { return strings.HasPrefix(e.Reason, r) }) {
			problems = append(problems, fmt.Sprintf("audit entry %+v: want autopilot.change by autopilot on rooms/sale, with a reason", e))
		}
		if e.After["new_users_per_minute"] < e.Before["new_users_per_minute"] && e.After["total_active_users"] < e.Before["total_active_users"] && strings.HasPrefix(e.Reason, "latency:") {
			down = true
		}
	}
	if !down {
		problems = append(problems, fmt.Sprintf("the audit log has no decrease for latency: %+v", audit.Entries))
	}
	return problems
}
