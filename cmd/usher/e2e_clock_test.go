package main

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// metricValue returns the value of an unlabelled metric in a /metrics
// body.
func metricValue(body, name string) (float64, bool) {
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}

// TestE2EClocksMeasured starts three usher nodes (the binary) on one real
// redis-server, on this machine's one clock: within two rounds of
// readings each node counts the three nodes, measures them close together
// (within the readings' round trips), keeps the default slack of 250 ms,
// and warns of nothing.
func TestE2EClocksMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	t.Parallel()
	_, adms, paths := startAdminNodes(t, 3, "clock shop")
	deadline := time.Now().Add(2*clockEvery + 10*time.Second)
	for i, adm := range adms {
		var body string
		for {
			code, b := adminGet(t, adm, "e2e-write", "/metrics")
			if n, ok := metricValue(b, "usher_clock_nodes"); code == 200 && ok && n == 3 {
				body = b
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: not three nodes' clocks within %v:\n%s", i+1, 2*clockEvery+10*time.Second, b)
			}
			time.Sleep(200 * time.Millisecond)
		}
		for _, c := range []struct {
			name   string
			lo, hi float64
		}{
			// Round trips bound the readings: under a millisecond on a quiet
			// machine, longer when the tests beside it load it.
			{"usher_clock_spread_seconds", 0, 0.05},
			{"usher_clock_offset_seconds", -0.05, 0.05},
			{"usher_clock_error_seconds", 0, 0.05},
			{"usher_clock_slack_seconds", 0.25, 0.25},
		} {
			v, ok := metricValue(body, c.name)
			if !ok || v < c.lo || v > c.hi {
				t.Errorf("node %d: %s = %v (found %v), want %v to %v", i+1, c.name, v, ok, c.lo, c.hi)
			}
		}
	}
	for i, p := range paths {
		log, err := os.ReadFile(p + ".log")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(log), "clocks:") {
			t.Errorf("node %d warned of its clock on one host:\n%s", i+1, log)
		}
	}
}
