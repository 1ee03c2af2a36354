package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/usherhq/usher/internal/admin"
)

// audit runs "usher audit": the changes made through the admin API,
// newest first.
func (m *Main) audit(ctx context.Context, args []string) error {
	c := m.newAdminCmd("audit", "audit [--room ROOM] [--limit N] [--before VERSION]")
	room := c.fs.String("room", "", "only this room's changes")
	limit := c.fs.Int("limit", 20, "the most entries to show (1 to 1000)")
	before := c.fs.Int64("before", 0, "show entries older than this version (the next page)")
	if err := c.parse(args, 0, false); err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return c.usage(fmt.Sprintf("--limit: must be from 1 to 1000, got %d", *limit))
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	v, err := c.client.Audit(ctx, *room, *limit, *before)
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(v)
	}
	if len(v.Entries) == 0 {
		fmt.Fprintln(m.Stdout, "no changes recorded")
		return nil
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tTIME\tTOKEN\tACTION\tTARGET\tCHANGE")
	for _, e := range v.Entries {
		change := auditChange(e)
		if e.Reason != "" {
			change += " (" + e.Reason + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", e.Version, e.Time.UTC().Format(time.RFC3339), e.Token, e.Action, e.Target, change)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.NextBefore != 0 {
		fmt.Fprintf(m.Stdout, "(more: usher audit --before %d)\n", v.NextBefore)
	}
	return nil
}

// auditChange describes an entry's change on one line: each field's value
// before and after; what was created or deleted.
func auditChange(e admin.AuditEntry) string {
	switch {
	case e.Before == nil && e.After == nil:
		return "-"
	case e.Before == nil:
		return "created " + show(e.After)
	case e.After == nil:
		return "deleted " + show(e.Before)
	}
	b, okb := e.Before.(map[string]any)
	a, oka := e.After.(map[string]any)
	if !okb || !oka {
		return show(e.Before) + " → " + show(e.After)
	}
	keys := make(map[string]bool)
	for k := range b {
		keys[k] = true
	}
	for k := range a {
		keys[k] = true
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if show(b[k]) != show(a[k]) {
			parts = append(parts, fmt.Sprintf("%s %s → %s", k, show(b[k]), show(a[k])))
		}
	}
	if len(parts) == 0 {
		return "no change in force"
	}
	return strings.Join(parts, "; ")
}
