package main

import (
	"context"
	"fmt"
	"strconv"
)

// events runs "usher events VERB ROOM ...": a room's scheduled events.
func (m *Main) events(ctx context.Context, args []string) error {
	const verbs = "list, get, add, set, delete"
	if len(args) == 0 {
		fmt.Fprintf(m.Stderr, "Usage: usher events VERB ROOM ...\nVerbs: %s (usher events VERB -h for each)\n", verbs)
		return errUsage
	}
	verb, rest := args[0], args[1:]
	var c *adminCmd
	switch verb {
	case "list":
		c = m.newAdminCmd("events list", "events list ROOM")
		if err := c.parse(rest, 1, false); err != nil {
			return err
		}
	case "get", "delete":
		c = m.newAdminCmd("events "+verb, "events "+verb+" ROOM NAME")
		if err := c.parse(rest, 2, false); err != nil {
			return err
		}
	case "add":
		c = m.newAdminCmd("events add", "events add ROOM name=NAME event_start_time=TIME event_end_time=TIME [FIELD=VALUE...]")
		if err := c.parse(rest, 2, true); err != nil {
			return err
		}
	case "set":
		c = m.newAdminCmd("events set", "events set ROOM NAME FIELD=VALUE...")
		if err := c.parse(rest, 3, true); err != nil {
			return err
		}
	default:
		fmt.Fprintf(m.Stderr, "usher events: unknown verb %q; verbs: %s\n", verb, verbs)
		return errUsage
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	room := c.args[0]
	switch verb {
	case "list":
		v, err := c.client.Events(ctx, room)
		if err != nil {
			return apiError(err)
		}
		if *c.asJSON {
			return c.printJSON(v)
		}
		if len(v.Events) == 0 {
			fmt.Fprintf(m.Stdout, "%s: no events\n", room)
		}
		for _, e := range v.Events {
			fmt.Fprintln(m.Stdout, eventLine(e))
		}
		return nil
	case "get":
		e, err := c.client.Event(ctx, room, c.args[1])
		if err != nil {
			return apiError(err)
		}
		if *c.asJSON {
			return c.printJSON(e)
		}
		fmt.Fprintln(m.Stdout, eventLine(e))
		return nil
	case "add":
		f, err := fields(c.args[1:])
		if err != nil {
			return c.usage(err.Error())
		}
		list, err := c.client.Events(ctx, room)
		if err != nil {
			return apiError(err)
		}
		e, err := c.client.CreateEvent(ctx, room, list.ETag, f)
		if err != nil {
			return apiError(err)
		}
		return c.printEvent(room, "added", e)
	case "set":
		f, err := fields(c.args[2:])
		if err != nil {
			return c.usage(err.Error())
		}
		cur, err := c.client.Event(ctx, room, c.args[1])
		if err != nil {
			return apiError(err)
		}
		e, err := c.client.PatchEvent(ctx, room, c.args[1], fmt.Sprint(cur["etag"]), f)
		if err != nil {
			return apiError(err)
		}
		return c.printEvent(room, "changed", e)
	default: // delete
		cur, err := c.client.Event(ctx, room, c.args[1])
		if err != nil {
			return apiError(err)
		}
		if err := c.client.DeleteEvent(ctx, room, c.args[1], fmt.Sprint(cur["etag"])); err != nil {
			return apiError(err)
		}
		fmt.Fprintf(m.Stdout, "%s: event %s deleted\n", room, strconv.Quote(c.args[1]))
		return nil
	}
}

// printEvent prints an event that a verb made or changed.
func (c *adminCmd) printEvent(room, what string, e map[string]any) error {
	if *c.asJSON {
		return c.printJSON(e)
	}
	fmt.Fprintf(c.m.Stdout, "%s: event %s\n  %s\n", room, what, eventLine(e))
	return nil
}
