package main

import (
	"context"
	"fmt"
	"time"
)

// top runs "usher top": every room's status, redrawn every interval until
// interrupted. On a terminal it redraws in place; otherwise (a pipe, a
// file) it writes one block per refresh.
func (m *Main) top(ctx context.Context, args []string) error {
	c := m.newAdminCmd("top", "top [--interval 1s] [--once]")
	every := c.fs.Duration("interval", time.Second, "how often to refresh")
	once := c.fs.Bool("once", false, "print one refresh and exit")
	if err := c.parse(args, 0, false); err != nil {
		return err
	}
	if *every < 100*time.Millisecond {
		return c.usage(fmt.Sprintf("--interval: must be at least 100ms, got %s", *every))
	}
	term := writesToTerminal(m.Stdout)
	tick := time.NewTicker(*every)
	defer tick.Stop()
	for first := true; ; first = false {
		rctx, cancel := context.WithTimeout(ctx, max(*every, 2*time.Second))
		st, err := c.client.Status(rctx)
		cancel()
		switch {
		case err != nil && *once:
			return apiError(err)
		case *c.asJSON && err == nil:
			if err := c.printJSON(st); err != nil {
				return err
			}
		default:
			if term {
				fmt.Fprint(m.Stdout, "\x1b[H\x1b[2J")
			} else if !first {
				fmt.Fprintln(m.Stdout)
			}
			now := time.Now().UTC().Format(time.RFC3339)
			if err != nil {
				fmt.Fprintf(m.Stdout, "usher top  %s  %s  error: %v\n", *c.addr, now, apiError(err))
			} else {
				fmt.Fprintf(m.Stdout, "usher top  %s  %s  runtime version %d%s\n", *c.addr, now, st.Version, topRefresh(*once, *every))
				if err := writeStatus(m.Stdout, st); err != nil {
					return err
				}
			}
		}
		if *once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// topRefresh is what top's header says of its refreshing: nothing with
// --once, which prints one refresh and exits.
func topRefresh(once bool, every time.Duration) string {
	if once {
		return ""
	}
	return fmt.Sprintf("  (every %s; Ctrl-C ends)", every)
}
