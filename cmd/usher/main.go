// Command usher is a self-hosted virtual waiting room. See the README, or
// run `usher help`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// A SIGHUP before the config reloader listens must not end the
	// process; the reloader takes the signal over once it runs.
	signal.Ignore(syscall.SIGHUP)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(NewMain().Run(ctx, os.Args[1:]))
}
