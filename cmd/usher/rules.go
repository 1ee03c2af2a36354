package main

import (
	"context"
	"fmt"
	"strconv"
)

// rules runs "usher rules VERB ROOM ...": a room's bypass rules, numbered
// from 0 in order.
func (m *Main) rules(ctx context.Context, args []string) error {
	const verbs = "list, get, add, set, delete, enable, disable"
	if len(args) == 0 {
		fmt.Fprintf(m.Stderr, "Usage: usher rules VERB ROOM ...\nVerbs: %s (usher rules VERB -h for each)\n", verbs)
		return errUsage
	}
	verb, rest := args[0], args[1:]
	var c *adminCmd
	switch verb {
	case "list":
		c = m.newAdminCmd("rules list", "rules list ROOM")
		if err := c.parse(rest, 1, false); err != nil {
			return err
		}
	case "get", "delete", "enable", "disable":
		c = m.newAdminCmd("rules "+verb, "rules "+verb+" ROOM INDEX")
		if err := c.parse(rest, 2, false); err != nil {
			return err
		}
	case "add":
		c = m.newAdminCmd("rules add", "rules add ROOM expression=EXPR [description=TEXT] [enabled=false]")
		if err := c.parse(rest, 2, true); err != nil {
			return err
		}
	case "set":
		c = m.newAdminCmd("rules set", "rules set ROOM INDEX FIELD=VALUE...")
		if err := c.parse(rest, 3, true); err != nil {
			return err
		}
	default:
		fmt.Fprintf(m.Stderr, "usher rules: unknown verb %q; verbs: %s\n", verb, verbs)
		return errUsage
	}
	room := c.args[0]
	index := -1
	if verb != "list" && verb != "add" {
		n, err := strconv.Atoi(c.args[1])
		if err != nil || n < 0 {
			return c.usage(fmt.Sprintf("INDEX: a rule's number from 0 (usher rules list %s), got %q", room, c.args[1]))
		}
		index = n
	}
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	switch verb {
	case "list":
		v, err := c.client.Rules(ctx, room)
		if err != nil {
			return apiError(err)
		}
		if *c.asJSON {
			return c.printJSON(v)
		}
		if len(v.Rules) == 0 {
			fmt.Fprintf(m.Stdout, "%s: no rules\n", room)
		}
		for _, r := range v.Rules {
			fmt.Fprintln(m.Stdout, ruleLine(r))
		}
		return nil
	case "get":
		r, err := c.client.Rule(ctx, room, index)
		if err != nil {
			return apiError(err)
		}
		return c.printRule(room, "", r)
	case "add":
		f, err := fields(c.args[1:])
		if err != nil {
			return c.usage(err.Error())
		}
		list, err := c.client.Rules(ctx, room)
		if err != nil {
			return apiError(err)
		}
		r, err := c.client.CreateRule(ctx, room, list.ETag, f)
		if err != nil {
			return apiError(err)
		}
		return c.printRule(room, "added", r)
	}
	cur, err := c.client.Rule(ctx, room, index)
	if err != nil {
		return apiError(err)
	}
	etag := fmt.Sprint(cur["etag"])
	var f map[string]any
	switch verb {
	case "delete":
		if err := c.client.DeleteRule(ctx, room, index, etag); err != nil {
			return apiError(err)
		}
		fmt.Fprintf(m.Stdout, "%s: rule %d deleted (the rules after it move up one place)\n", room, index)
		return nil
	case "enable", "disable":
		f = map[string]any{"enabled": verb == "enable"}
	default: // set
		if f, err = fields(c.args[2:]); err != nil {
			return c.usage(err.Error())
		}
	}
	r, err := c.client.PatchRule(ctx, room, index, etag, f)
	if err != nil {
		return apiError(err)
	}
	return c.printRule(room, "changed", r)
}

// printRule prints a rule a verb read, made or changed.
func (c *adminCmd) printRule(room, what string, r map[string]any) error {
	if *c.asJSON {
		return c.printJSON(r)
	}
	if what == "" {
		fmt.Fprintln(c.m.Stdout, ruleLine(r))
		return nil
	}
	fmt.Fprintf(c.m.Stdout, "%s: rule %s\n  %s\n", room, what, ruleLine(r))
	return nil
}
