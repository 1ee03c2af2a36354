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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(NewMain().Run(ctx, os.Args[1:]))
}
