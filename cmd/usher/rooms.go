package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/usherhq/usher/internal/admin"
)

// rooms runs "usher rooms": every room's status, one line each.
func (m *Main) rooms(ctx context.Context, args []string) error {
	c := m.newAdminCmd("rooms", "rooms")
	if err := c.parse(args, 0, false); err != nil {
		return err
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	st, err := c.client.Status(ctx)
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(st)
	}
	return writeStatus(m.Stdout, st)
}

// writeStatus writes the rooms' status as a table.
func writeStatus(w io.Writer, st admin.StatusView) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ROOM\tACTIVE\tWAITING\tADMITTED/MIN\tSLOTS\tMETHOD\tQUEUE-ALL\tSUSPENDED\tEVENT\tOVERRIDES")
	for _, r := range st.Rooms {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t%s\t%s\t%s\t%s\t%d\t(%s)\n", r.ID, r.QueueingMethod, onOffText(r.QueueAll), onOffText(r.Suspended), eventText(r), r.Overrides, r.Error)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%d/%d\t%d\t%s\t%s\t%s\t%s\t%d\n", r.ID, r.Active, r.TotalActiveUsers, r.Waiting,
			r.AdmittedLastMinute, r.NewUsersPerMinute, r.Slots, r.QueueingMethod, onOffText(r.QueueAll), onOffText(r.Suspended), eventText(r), r.Overrides)
	}
	return tw.Flush()
}

func onOffText(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// eventText names a room's event and phase: "-", "drop", "drop (pre-queue)".
func eventText(r admin.RoomStatus) string {
	switch r.Phase {
	case "event":
		return r.Event
	case "prequeue":
		return r.Event + " (pre-queue)"
	}
	return "-"
}

// room runs "usher room VERB ROOM ...".
func (m *Main) room(ctx context.Context, args []string) error {
	const verbs = "get, set, unset, reset, queue-all, suspend"
	if len(args) == 0 {
		fmt.Fprintf(m.Stderr, "Usage: usher room VERB ROOM ...\nVerbs: %s (usher room VERB -h for each)\n", verbs)
		return errUsage
	}
	switch verb, rest := args[0], args[1:]; verb {
	case "get":
		return m.roomGet(ctx, rest)
	case "set":
		return m.roomSet(ctx, rest)
	case "unset":
		return m.roomUnset(ctx, rest)
	case "reset":
		return m.roomReset(ctx, rest)
	case "queue-all", "suspend":
		return m.roomSwitch(ctx, verb, rest)
	default:
		fmt.Fprintf(m.Stderr, "usher room: unknown verb %q; verbs: %s\n", verb, verbs)
		return errUsage
	}
}

func (m *Main) roomGet(ctx context.Context, args []string) error {
	c := m.newAdminCmd("room get", "room get ROOM")
	if err := c.parse(args, 1, false); err != nil {
		return err
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	v, err := c.client.Room(ctx, c.args[0])
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(v)
	}
	return writeRoom(m.Stdout, v)
}

// writeRoom writes a room: its settings (those set at runtime marked, with
// when, by whom and the file's value), events and rules.
func writeRoom(w io.Writer, v admin.RoomView) error {
	name, _ := v.Settings["name"].(string)
	fmt.Fprintf(w, "Room %s (%s), runtime version %d\n", v.ID, name, v.Version)
	if len(v.NotInForce) > 0 {
		fmt.Fprintln(w, "Its runtime overrides are NOT in force on this node (they did not fit its config file at start; usher room reset drops them):")
		for _, p := range v.NotInForce {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	fmt.Fprintln(w, "Settings (* set at runtime, over the config file):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	flat := flatten(v.Settings)
	for _, k := range slices.Sorted(maps.Keys(flat)) {
		mark := ""
		if o, ok := v.Overrides[k]; ok {
			mark = fmt.Sprintf("* since %s by %s (file: %s)", o.At.Format(time.RFC3339), o.By, show(o.File))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", k, show(flat[k]), mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "Events:%s\n", listMark(v, "events", len(v.Events.Events)))
	for _, e := range v.Events.Events {
		fmt.Fprintf(w, "  %s\n", eventLine(e))
	}
	fmt.Fprintf(w, "Rules:%s\n", listMark(v, "rules", len(v.Rules.Rules)))
	for _, r := range v.Rules.Rules {
		fmt.Fprintf(w, "  %s\n", ruleLine(r))
	}
	return nil
}

// listMark says when a room's events or rules are set at runtime.
func listMark(v admin.RoomView, field string, n int) string {
	mark := ""
	if n == 0 {
		mark = " none"
	}
	if o, ok := v.Overrides[field]; ok {
		file, _ := o.File.([]any)
		mark += fmt.Sprintf(" (* set at runtime since %s by %s; the file has %d)", o.At.Format(time.RFC3339), o.By, len(file))
	}
	return mark
}

// flatten writes cookie_attributes' keys as fields of their own, as the
// overrides name them; other blocks stay whole.
func flatten(settings map[string]any) map[string]any {
	out := make(map[string]any, len(settings))
	for k, v := range settings {
		if sub, ok := v.(map[string]any); ok && k == "cookie_attributes" {
			for sk, sv := range sub {
				out[k+"."+sk] = sv
			}
			continue
		}
		out[k] = v
	}
	return out
}

// eventLine describes an event on one line.
func eventLine(e map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s to %s", show(e["name"]), show(e["event_start_time"]), show(e["event_end_time"]))
	if p, ok := e["prequeue_start_time"]; ok {
		fmt.Fprintf(&b, ", pre-queue from %s", show(p))
	}
	skip := map[string]bool{"name": true, "event_start_time": true, "event_end_time": true, "prequeue_start_time": true, "etag": true}
	for _, k := range slices.Sorted(maps.Keys(e)) {
		if skip[k] || (k == "shuffle_at_event_start" && e[k] == false) {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", k, show(e[k]))
	}
	return b.String()
}

// ruleLine describes a rule on one line.
func ruleLine(r map[string]any) string {
	state := "enabled"
	if r["enabled"] == false {
		state = "disabled"
	}
	desc := show(r["description"])
	if r["description"] == nil {
		desc = "-"
	}
	return fmt.Sprintf("%s  %s  %s  %s", show(r["index"]), desc, state, show(r["expression"]))
}

func (m *Main) roomSet(ctx context.Context, args []string) error {
	c := m.newAdminCmd("room set", "room set ROOM FIELD=VALUE...")
	if err := c.parse(args, 2, true); err != nil {
		return err
	}
	f, err := fields(c.args[1:])
	if err != nil {
		return c.usage(err.Error())
	}
	return c.patchRoom(ctx, c.args[0], f)
}

func (m *Main) roomUnset(ctx context.Context, args []string) error {
	c := m.newAdminCmd("room unset", "room unset ROOM FIELD...")
	if err := c.parse(args, 2, true); err != nil {
		return err
	}
	f := make(map[string]any)
	for _, k := range c.args[1:] {
		if strings.Contains(k, "=") {
			return c.usage(fmt.Sprintf("%q: name fields only (unset drops their runtime values)", k))
		}
		top, sub, dotted := strings.Cut(k, ".")
		if dotted {
			m, _ := f[top].(map[string]any)
			if m == nil {
				m = make(map[string]any)
				f[top] = m
			}
			m[sub] = nil
			continue
		}
		f[k] = nil
	}
	return c.patchRoom(ctx, c.args[0], f)
}

// roomSwitch runs "usher room queue-all|suspend ROOM on|off". A switch to
// the config file's value drops the runtime value rather than set it, so
// that the room follows its file again: "queue-all on" then "queue-all
// off" leaves nothing pinned, and a later change of the file applies.
func (m *Main) roomSwitch(ctx context.Context, verb string, args []string) error {
	c := m.newAdminCmd("room "+verb, "room "+verb+" ROOM on|off")
	if err := c.parse(args, 2, false); err != nil {
		return err
	}
	on, ok := onOff(c.args[1])
	if !ok {
		return c.usage(fmt.Sprintf("want on or off, got %q", c.args[1]))
	}
	field := map[string]string{"queue-all": "queue_all", "suspend": "suspended"}[verb]
	return c.patchRoomFrom(ctx, c.args[0], func(before admin.RoomView) map[string]any {
		if fileSays(before, field, on) {
			return map[string]any{field: nil}
		}
		return map[string]any{field: on}
	})
}

// fileSays reports whether the config file sets v's field to want: the
// file's value under an override, else the value in force, which is the
// file's. A room made at runtime has no file value.
func fileSays(v admin.RoomView, field string, want bool) bool {
	file := v.Settings[field]
	if o, ok := v.Overrides[field]; ok {
		file = o.File
	}
	b, ok := file.(bool)
	return ok && b == want
}

// patchRoom changes fields of a room, with the ETag of the room as it is
// now, and prints each field's value before and after.
func (c *adminCmd) patchRoom(ctx context.Context, id string, f map[string]any) error {
	return c.patchRoomFrom(ctx, id, func(admin.RoomView) map[string]any { return f })
}

// patchRoomFrom is patchRoom with the fields made from the room as it is
// now.
func (c *adminCmd) patchRoomFrom(ctx context.Context, id string, fields func(before admin.RoomView) map[string]any) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	before, err := c.client.Room(ctx, id)
	if err != nil {
		return apiError(err)
	}
	f := fields(before)
	after, err := c.client.PatchRoom(ctx, id, before.ETag, f)
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(after)
	}
	was, now := flatten(before.Settings), flatten(after.Settings)
	for _, k := range slices.Sorted(maps.Keys(flatten(f))) {
		note := "set at runtime"
		if _, ok := after.Overrides[k]; !ok {
			note = "the config file's value"
		}
		fmt.Fprintf(c.m.Stdout, "%s: %s %s → %s (%s)\n", id, k, show(was[k]), show(now[k]), note)
	}
	if after.Version != before.Version {
		fmt.Fprintf(c.m.Stdout, "runtime version %d; every node applies it within about a second\n", after.Version)
	}
	return nil
}

func (m *Main) roomReset(ctx context.Context, args []string) error {
	c := m.newAdminCmd("room reset", "room reset ROOM")
	if err := c.parse(args, 1, false); err != nil {
		return err
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	id := c.args[0]
	before, err := c.client.Room(ctx, id)
	if err != nil {
		return apiError(err)
	}
	after, err := c.client.ResetRoom(ctx, id, before.ETag)
	if err != nil {
		return apiError(err)
	}
	if *c.asJSON {
		return c.printJSON(after)
	}
	if len(before.Overrides) == 0 {
		fmt.Fprintf(m.Stdout, "%s: no runtime overrides; the config file's values are in force\n", id)
		return nil
	}
	fmt.Fprintf(m.Stdout, "%s: dropped %d runtime override(s): %s; the config file's values are in force\n",
		id, len(before.Overrides), strings.Join(slices.Sorted(maps.Keys(before.Overrides)), ", "))
	return nil
}
