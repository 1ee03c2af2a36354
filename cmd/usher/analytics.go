package main

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/usherhq/usher/internal/analytics"
)

// analytics runs "usher analytics ROOM": the room's analytics per minute
// (or hour) over the last --since.
func (m *Main) analytics(ctx context.Context, args []string) error {
	c := m.newAdminCmd("analytics", "analytics ROOM [--since 1h] [--step minute|hour]")
	since := c.fs.Duration("since", time.Hour, "how far back to show (at most 24h by the minute, 720h by the hour)")
	step := c.fs.String("step", "", "minute or hour (default: minute up to --since 24h, hour beyond)")
	if err := c.parse(args, 1, false); err != nil {
		return err
	}
	if *since <= 0 {
		return c.usage(fmt.Sprintf("--since: must be above zero, got %v", *since))
	}
	if *step == "" {
		*step = "minute"
		if *since > 24*time.Hour {
			*step = "hour"
		}
	}
	if _, ok := analytics.ParseStep(*step); !ok {
		return c.usage(fmt.Sprintf("--step: %q is neither minute nor hour", *step))
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	now := nowFunc()
	rep, err := c.client.Analytics(ctx, c.args[0], now.Add(-*since), now, *step)
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(rep)
	}
	if len(rep.Points) == 0 {
		fmt.Fprintf(m.Stdout, "%s: nothing counted in the last %v\n", rep.Room, *since)
		return nil
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TIME\tARRIVED\tADMITTED\tABANDONED\tREVOKED\tPEAK WAITING\tPEAK ACTIVE\tWAIT P50\tWAIT P95\tWAIT P99\tETA ERR P50\tETA ERR P90\t")
	var tot analytics.Point
	for _, p := range rep.Points {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", p.T.Local().Format("2006-01-02 15:04"),
			p.Arrivals, p.Admissions, p.Abandoned, p.Revoked, p.PeakWaiting, p.PeakActive,
			secs(p.QueueWait.P50, p.QueueWait.Count), secs(p.QueueWait.P95, p.QueueWait.Count), secs(p.QueueWait.P99, p.QueueWait.Count),
			pct(p.ETAError.P50, p.ETAError.P90), pct(p.ETAError.P90, p.ETAError.P90))
		tot.Arrivals += p.Arrivals
		tot.Admissions += p.Admissions
		tot.Abandoned += p.Abandoned
		tot.Revoked += p.Revoked
		tot.PeakWaiting = max(tot.PeakWaiting, p.PeakWaiting)
		tot.PeakActive = max(tot.PeakActive, p.PeakActive)
	}
	fmt.Fprintf(tw, "TOTAL\t%d\t%d\t%d\t%d\t%d\t%d\t\t\t\t\t\t\n", tot.Arrivals, tot.Admissions, tot.Abandoned, tot.Revoked, tot.PeakWaiting, tot.PeakActive)
	return tw.Flush()
}

// secs shows a percentile of seconds ("-" when nothing was measured).
func secs(v float64, n uint64) string {
	if n == 0 {
		return "-"
	}
	return (time.Duration(v * float64(time.Second))).Round(time.Second).String()
}

// pct shows a percentile of the wait error ("-" when p90, the largest
// shown, is 0: nobody admitted had a wait announced, or every estimate
// was exact).
func pct(v, p90 float64) string {
	if p90 == 0 {
		return "-"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + "%"
}
