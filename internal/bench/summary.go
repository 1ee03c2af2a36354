package bench

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// WriteSummary writes res in a few sentences for people, before the
// figures: who came and what became of them, what bound the room and
// whether its limits held, the queue's peak and drain, the waits, and how
// far off the announced wait was. Durations are written as people read
// them (1m12s), moments as clock times from the start (4:10). Warnings
// are not included: they are res.Warnings.
func WriteSummary(w io.Writer, res Result, lim Limits) {
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }

	who := fmt.Sprintf("%s visitors over %s: %s admitted", count(res.Visitors), Human(secs(res.DurationS)), count(res.Admitted))
	if res.Abandoned > 0 {
		who += fmt.Sprintf(", %s gave up waiting", count(res.Abandoned))
	}
	if res.GaveUp > 0 {
		who += fmt.Sprintf(", %s left after errors", count(res.GaveUp))
	}
	if res.Unfinished > 0 {
		who += fmt.Sprintf(", %s still there at the end", count(res.Unfinished))
	}
	line("%s.", who)

	held := "the limits held"
	if res.MaxActive > lim.TotalActiveUsers || (lim.NewUsersPerMinute > 0 && res.MaxRate > lim.NewUsersPerMinute) {
		held = "A LIMIT WAS BROKEN"
	}
	rate := fmt.Sprintf("at most %s admitted in 60 s", count(res.MaxRate))
	if lim.NewUsersPerMinute > 0 {
		rate += " of " + count(lim.NewUsersPerMinute)
	}
	limits := fmt.Sprintf("at most %s active of %s, %s (%s)", count(res.MaxActive), count(lim.TotalActiveUsers), rate, held)
	switch res.BoundBy {
	case BoundByConcurrency:
		line("The room was bound by concurrency: %s.", limits)
	case BoundByRate:
		line("The room was bound by rate: %s.", limits)
	default:
		line("Limits: %s.", limits)
	}

	if res.QueuePeak == 0 {
		line("Queue: nobody waited.")
	} else {
		q := fmt.Sprintf("Queue: peaked at %s waiting at %s", count(res.QueuePeak), Clock(secs(res.QueuePeakAtS)))
		if res.QueueDrained {
			q += ", drained at " + Clock(secs(res.QueueDrainedS))
		} else {
			q += ", not drained at the end"
		}
		q += fmt.Sprintf("; %.1f %% of the room in use while it lasted", 100*res.Utilization)
		if res.MaxIdleS > 0 {
			q += fmt.Sprintf(", free slots idle at most %s in a row", Human(secs(res.MaxIdleS)))
		}
		line("%s.", q)
	}

	if res.Admitted > 0 {
		line("Wait: median %s, p90 %s, p99 %s.", Human(secs(res.WaitP50S)), Human(secs(res.WaitP90S)), Human(secs(res.WaitP99S)))
	}
	if res.ETAVisitors > 0 {
		a := fmt.Sprintf("Announced wait, first waiting answer (%s who waited two refreshes or more): off by a median of %s (%.0f %%), p90 %s (%.0f %%)",
			plural(res.ETAVisitors, "visitor", "visitors"), Human(secs(res.ETAErrorMedianS)), res.ETAErrorMedianPct, Human(secs(res.ETAErrorP90S)), res.ETAErrorP90Pct)
		if res.ETAUnknown > 0 {
			a += fmt.Sprintf("; %s announced no wait", count(res.ETAUnknown))
		}
		if c := res.WaitRangeCoverage; c != nil {
			a += fmt.Sprintf("; %.0f %% of the waits fell in the announced range", 100**c)
		}
		line("%s.", a)
	}
	if res.FIFOInversions > 0 || res.RequeuedWhileBrowsing > 0 {
		line("Order: %s FIFO inversions, %s visitors sent back to the line while their session held.", count(res.FIFOInversions), count(res.RequeuedWhileBrowsing))
	}
	_, _ = io.WriteString(w, b.String())
}

// secs is seconds as a Duration.
func secs(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// Human writes d as people read a duration: "850ms", "4.2s", "15s",
// "1m12s", "2h05m".
func Human(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + Human(-d)
	case d == 0:
		return "0s"
	case d < time.Second:
		return strconv.FormatInt(d.Round(time.Millisecond).Milliseconds(), 10) + "ms"
	case d < 10*time.Second:
		return strconv.FormatFloat(d.Round(100*time.Millisecond).Seconds(), 'f', -1, 64) + "s"
	case d < time.Minute:
		return strconv.Itoa(int(d.Round(time.Second).Seconds())) + "s"
	case d < time.Hour:
		d = d.Round(time.Second)
		m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
		if s == 0 {
			return fmt.Sprintf("%dm", m)
		}
		return fmt.Sprintf("%dm%02ds", m, s)
	}
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
}

// Clock writes d, a moment from a run's start, as a clock: "0:42", "4:10",
// "1:02:03".
func Clock(d time.Duration) string {
	d = max(d, 0).Round(time.Second)
	h, m, s := int(d/time.Hour), int(d%time.Hour/time.Minute), int(d%time.Minute/time.Second)
	if h > 0 {
		return fmt.Sprintf("%d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%d:%02d", m, s)
}

// count writes n with thousands separators: "5,000".
func count(n int) string {
	s := strconv.Itoa(max(n, -n))
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		return "-" + s
	}
	return s
}

// plural writes n and the singular or plural that follows it: "1
// request", "2 requests".
func plural(n int, one, other string) string {
	if n == 1 {
		return "1 " + one
	}
	return count(n) + " " + other
}

// errorKinds lists counts by kind: "timeout 3, status_502 2".
func errorKinds(counts map[string]int) string {
	var parts []string
	for _, k := range ErrorKinds(counts) {
		parts = append(parts, k+" "+count(counts[k]))
	}
	return strings.Join(parts, ", ")
}

// Count writes n with thousands separators, as the summaries do.
func Count(n int) string { return count(n) }
