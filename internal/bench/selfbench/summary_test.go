package selfbench

import (
	"strings"
	"testing"
)

// TestThroughputSummaryTargets: with --targets the throughput summary
// speaks only of the targets loaded (it read "an admitted visitor's
// request runs at 0.00x ... 0 against 13,516 req/s" when admitted was not
// among them), and of all of them without.
func TestThroughputSummaryTargets(t *testing.T) {
	r := &ThroughputResult{
		Rounds: 2, DurationS: 4, Workers: 32, Store: "embedded",
		ProxyTuned: Figure{RPS: 13516, P50ms: 2, CPUus: 66.8},
		NewVisitor: Figure{RPS: 5288, P50ms: 5.8, CPUus: 191.1},
		Admitted:   Figure{RPS: 13000, P50ms: 2.1, CPUus: 60},
		CheckIn:    Figure{RPS: 20000, P50ms: 1.2, CPUus: 38},

		NewVisitorVsProxyTuned: 0.39, AdmittedVsProxyTuned: 0.96, CheckInVsProxyTuned: 1.48,
	}
	var b strings.Builder
	r.Targets = []string{"proxy-tuned", "new"}
	writeThroughputSummary(&b, r)
	got := b.String()
	for _, want := range []string{"new visitor 0.39x", "13,516 req/s", "usher 191.1us new visitor", "tuned proxy 66.8us"} {
		if !strings.Contains(got, want) {
			t.Errorf("--targets proxy-tuned,new: summary lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"admitted", "check-in", "unpooled", "origin direct", "0.00x"} {
		if strings.Contains(got, not) {
			t.Errorf("--targets proxy-tuned,new: summary speaks of %q:\n%s", not, got)
		}
	}
	b.Reset()
	r.Targets = nil
	writeThroughputSummary(&b, r)
	got = b.String()
	for _, want := range []string{"admitted visitor 0.96x, new visitor 0.39x, check-in 1.48x", "origin direct"} {
		if !strings.Contains(got, want) {
			t.Errorf("all targets: summary lacks %q:\n%s", want, got)
		}
	}
}

// TestBenchWarningsTargets: with --targets, the targets not loaded raise
// no warning; a loaded one that served nothing does.
func TestBenchWarningsTargets(t *testing.T) {
	r := &ThroughputResult{Targets: []string{"admitted", "proxy-tuned"}, Admitted: Figure{RPS: 10}}
	ws := Warnings(r)
	if len(ws) != 1 || !strings.HasPrefix(ws[0], "proxy-tuned: no request succeeded") {
		t.Errorf("warnings %q: want one, for proxy-tuned", ws)
	}
	if ws := Warnings(&ThroughputResult{}); len(ws) != 6 {
		t.Errorf("all targets loaded, none served: %d warnings %q, want 6", len(ws), ws)
	}
}
