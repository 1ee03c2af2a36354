package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/usherhq/usher/internal/admin"
)

// invite runs "usher invite new": it asks a running usher's admin API for an
// invite link and prints it.
func (m *Main) invite(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "new" {
		fmt.Fprint(m.Stderr, "Usage: usher invite new --room ROOM --uses N --expires T (--admit | --front) [--url BASE]\n")
		return errUsage
	}
	fs := m.flags("invite new", "invite new --room ROOM --uses N --expires T (--admit | --front) [--url BASE] [--admin ADDR] [--token TOKEN]")
	room := fs.String("room", "", "the room the invite is for (required)")
	uses := fs.Int("uses", 1, "how many times the link may be used")
	expires := fs.String("expires", "", `when the link stops working: a duration from now ("24h") or an RFC 3339 time (required)`)
	admit := fs.Bool("admit", false, "the link lets its visitor in at once, counted, even past the limits")
	front := fs.Bool("front", false, "the link gives its visitor a place at the front of the line")
	base := fs.String("url", "", "the site's public URL (https://shop.example), to print the whole link")
	adminAddr := fs.String("admin", os.Getenv("USHER_ADMIN"), "the admin listener, host:port or URL (env USHER_ADMIN)")
	token := fs.String("token", os.Getenv("USHER_TOKEN"), "the admin token (env USHER_TOKEN)")
	if err := parse(fs, args[1:]); err != nil {
		return err
	}
	var problems []string
	if *room == "" {
		problems = append(problems, "--room is required")
	}
	if *expires == "" {
		problems = append(problems, "--expires is required (a duration like 24h, or an RFC 3339 time)")
	}
	if *admit == *front {
		problems = append(problems, "give exactly one of --admit and --front")
	}
	if *adminAddr == "" {
		problems = append(problems, "--admin (or USHER_ADMIN) is required: the running usher's admin listener")
	}
	if *token == "" {
		problems = append(problems, "--token (or USHER_TOKEN) is required")
	}
	if *uses < 1 {
		problems = append(problems, fmt.Sprintf("--uses must be at least 1, got %d", *uses))
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(m.Stderr, "usher invite new: "+p)
		}
		return errUsage
	}
	mode := "front"
	if *admit {
		mode = "admit"
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := admin.NewClient(*adminAddr, *token).NewInvite(ctx, *room, *uses, *expires, mode)
	if err != nil {
		return fmt.Errorf("admin API: %w", apiError(err))
	}
	if out.Path == "" {
		return errors.New("admin API: an answer without a link")
	}
	link := out.Path
	if *base != "" {
		link = strings.TrimSuffix(*base, "/") + out.Path
	}
	fmt.Fprintln(m.Stdout, link)
	if *base == "" {
		fmt.Fprintln(m.Stderr, "(a path: put the site's address in front of it, or pass --url https://your.site)")
	}
	fmt.Fprintf(m.Stderr, "%s, %d use(s), until %s\n", mode, *uses, out.Expires.Format(time.RFC3339))
	return nil
}
