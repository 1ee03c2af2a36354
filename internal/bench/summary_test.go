package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestHumanAndClock(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 850 * time.Millisecond: "850ms", 4240 * time.Millisecond: "4.2s", 4 * time.Second: "4s",
		15400 * time.Millisecond: "15s", 72 * time.Second: "1m12s", 2 * time.Minute: "2m",
		125*time.Minute + 20*time.Second: "2h05m", -3 * time.Second: "-3s",
	} {
		if got := Human(d); got != want {
			t.Errorf("Human(%v) = %q, want %q", d, got, want)
		}
	}
	for d, want := range map[time.Duration]string{
		0: "0:00", 42 * time.Second: "0:42", 250 * time.Second: "4:10", time.Hour + 2*time.Minute + 3*time.Second: "1:02:03",
		-time.Second: "0:00",
	} {
		if got := Clock(d); got != want {
			t.Errorf("Clock(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 5000: "5,000", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := Count(n); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

// queueTimeline: x fills the room of one from 0 (session 10 s); w1 waits
// from 1 and w2 from 2 (the peak, 2 waiting, at 2 s); w1 goes in at 10,
// w2 at 20 (the queue drains at 20). Announced: w1 1 min at 1 (actual 9 s,
// off by 51 s), w2 1 min at 2 (actual 18 s, off by 42 s).
func queueTimeline() *Timeline {
	known := func(sec float64) []CheckIn {
		return []CheckIn{{At: at(sec), Position: 1, ETAKnown: true, ETA: time.Minute, Refresh: time.Second}}
	}
	return &Timeline{Start: at(0), End: at(30), Visitors: []Visitor{
		{ID: "x", Arrival: at(0), Admitted: at(0), Requests: ats(0), Left: at(10)},
		{ID: "w1", Arrival: at(1), CheckIns: known(1), Admitted: at(10), Requests: ats(10), Left: at(30)},
		{ID: "w2", Arrival: at(2), CheckIns: known(2), Admitted: at(20), Requests: ats(20), Left: at(30)},
	}}
}

func TestReportQueueAndBound(t *testing.T) {
	lim := Limits{TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: 10 * time.Second, RefreshInterval: time.Second}
	res := Report(queueTimeline(), lim)
	if res.QueuePeak != 2 || !res.QueueDrained || res.BoundBy != BoundByConcurrency || len(res.Warnings) != 0 {
		t.Errorf("peak %d, drained %v, bound by %q, warnings %q", res.QueuePeak, res.QueueDrained, res.BoundBy, res.Warnings)
	}
	approx(t, "QueuePeakAtS", res.QueuePeakAtS, 2)
	approx(t, "QueueDrainedS", res.QueueDrainedS, 20)
	approx(t, "WaitP90S", res.WaitP90S, 18)
	approx(t, "ETAErrorMedianS", res.ETAErrorMedianS, 42)
	// Per visitor: w1 off by 51 s of 9 s, w2 by 42 s of 18 s.
	approx(t, "ETAErrorMedianPct", res.ETAErrorMedianPct, 100*42.0/18)
	approx(t, "ETAErrorP90Pct", res.ETAErrorP90Pct, 100*51.0/9)

	// With two places and one admission a minute, the rate holds the line.
	lim.TotalActiveUsers, lim.NewUsersPerMinute = 2, 1
	if res := Report(queueTimeline(), lim); res.BoundBy != BoundByRate {
		t.Errorf("bound by %q, want rate", res.BoundBy)
	}

	t.Run("not drained", func(t *testing.T) {
		tl := queueTimeline()
		tl.End = at(15)
		tl.Visitors[2].Admitted, tl.Visitors[2].Requests, tl.Visitors[2].Left = time.Time{}, nil, time.Time{}
		res := Report(tl, lim)
		if res.QueueDrained || res.QueueDrainedS != 0 || res.QueuePeak != 2 {
			t.Errorf("drained %v at %v, peak %d", res.QueueDrained, res.QueueDrainedS, res.QueuePeak)
		}
		if len(res.Warnings) != 1 || !strings.HasPrefix(res.Warnings[0], "1 visitor was still there") {
			t.Errorf("warnings %q", res.Warnings)
		}
	})
}

func TestReportWarnings(t *testing.T) {
	lim := Limits{TotalActiveUsers: 10, NewUsersPerMinute: 100, SessionDuration: time.Minute}
	tests := []struct {
		name string
		tl   *Timeline
		want []string
	}{
		{"nobody waited", &Timeline{Start: at(0), End: at(5), Visitors: []Visitor{
			{ID: "a", Arrival: at(0), Admitted: at(0), Requests: ats(0), Left: at(5)}}},
			[]string{"nobody waited: the room never filled"}},
		{"nobody admitted", &Timeline{Start: at(0), End: at(5), Visitors: []Visitor{
			{ID: "a", Arrival: at(0), CheckIns: checkIns(0, 1, 2), Abandoned: at(3), Left: at(3)}}},
			[]string{"nobody was admitted"}},
		{"nothing answered", &Timeline{Start: at(0), End: at(5), Visitors: []Visitor{
			{ID: "a", GaveUp: true, Left: at(5), Errors: []RequestError{{Kind: ErrTransport}}}}},
			[]string{"no request got an answer"}},
		{"errors", &Timeline{Start: at(0), End: at(5), Visitors: []Visitor{
			{ID: "a", Arrival: at(0), CheckIns: checkIns(0), Admitted: at(1), Requests: ats(1), Left: at(2),
				Errors: []RequestError{{Kind: ErrTimeout}, {Kind: ErrStatus, Status: 502}}}}},
			[]string{"2 requests failed (status_502 1, timeout 1)"}},
		{"no visitors", &Timeline{}, []string{"no visitors"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Report(tt.tl, lim).Warnings
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %q, want %q", got, tt.want)
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("warning %q, want it to start %q", got[i], w)
				}
			}
		})
	}
}

func TestWriteSummary(t *testing.T) {
	lim := Limits{TotalActiveUsers: 1, NewUsersPerMinute: 100, SessionDuration: 10 * time.Second, RefreshInterval: time.Second}
	var buf bytes.Buffer
	WriteSummary(&buf, Report(queueTimeline(), lim), lim)
	want := `3 visitors over 30s: 3 admitted.
The room was bound by concurrency: at most 1 active of 1, at most 3 admitted in 60 s of 100 (the limits held).
Queue: peaked at 2 waiting at 0:02, drained at 0:20; 100.0 % of the room in use while it lasted.
Wait: median 9s, p90 18s, p99 18s.
Announced wait, first waiting answer (2 visitors who waited two refreshes or more): off by a median of 42s (233 %), p90 51s (567 %).
`
	if buf.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", buf.String(), want)
	}

	buf.Reset()
	res := Report(&Timeline{Start: at(0), End: at(5), Visitors: []Visitor{
		{ID: "a", Arrival: at(0), Admitted: at(0), Requests: ats(0), Left: at(5)}, {ID: "b"}}}, lim)
	res.MaxActive = 2 // as if usher had let two in
	WriteSummary(&buf, res, lim)
	want = `2 visitors over 5s: 1 admitted, 1 still there at the end.
Limits: at most 2 active of 1, at most 1 admitted in 60 s of 100 (A LIMIT WAS BROKEN).
Queue: nobody waited.
Wait: median 0s, p90 0s, p99 0s.
`
	if buf.String() != want {
		t.Errorf("summary:\n%s\nwant:\n%s", buf.String(), want)
	}
}
