package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// TestMain runs the bench's target processes when the test binary is
// started as one (usher bench re-executes its own binary, here the test
// binary), and the tests otherwise.
func TestMain(m *testing.M) {
	if os.Getenv(benchChildEnv) != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := NewMain().Run(ctx, os.Args[1:])
		stop()
		os.Exit(code)
	}
	os.Exit(m.Run())
}
