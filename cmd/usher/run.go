package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Main is the usher program: its output streams and the subcommands. Tests
// run it in-process.
type Main struct {
	Stdout io.Writer
	Stderr io.Writer
	// Ready, when not nil, receives the addresses the public and admin
	// listeners bound once serve or demo is up (tests listen on :0).
	Ready func(public, admin string)
}

// NewMain returns a Main on the process's streams.
func NewMain() *Main { return &Main{Stdout: os.Stdout, Stderr: os.Stderr} }

const usage = `usher: a self-hosted virtual waiting room.

Usage:
  usher serve --config FILE   run the waiting room
  usher demo [--visitors N]   a sample shop behind a small room, on localhost
  usher check --config FILE   validate a config and explain each room
  usher keys new [--id ID]    print a new ticket key for the config
  usher bench --self          measure usher: flash-crowd, throughput, standing-room
  usher simulate --config F   what a room's visitors go through, on simulated time
  usher invite new --room R   print an invite link (--uses N --expires T, --admit or --front)
  usher health [--url URL]    exit 0 if a running usher answers /healthz
  usher verify-draw URL|FILE  recompute a room's published draws (/__usher/draws/ROOM)
  usher version               print the version, commit and build date

Change a running usher (its admin API; --admin ADDR or USHER_ADMIN, --token or USHER_TOKEN):
  usher rooms                 every room's status
  usher room get ROOM         a room's settings, events and rules (* set at runtime)
  usher room set ROOM F=V...  set settings at runtime (total_active_users=500 ...)
  usher room unset ROOM F...  drop settings' runtime values (back to the file's)
  usher room reset ROOM       drop every runtime value of the room
  usher room queue-all ROOM on|off
  usher room suspend ROOM on|off
  usher events list|get|add|set|delete ROOM ...
  usher rules list|get|add|set|delete|enable|disable ROOM ...
  usher audit [--room ROOM]   the changes made, newest first
  usher top                   every room's status, refreshed every second
  usher analytics ROOM        a room's analytics per minute (--since 1h) or hour

Run "usher COMMAND -h" for a command's flags.
`

// errUsage is returned for bad command lines (exit code 2).
var errUsage = errors.New("usage")

// Run runs the command line args and returns the exit code: 0 on success, 1
// on failure, 2 on a bad command line.
func (m *Main) Run(ctx context.Context, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(m.Stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "serve":
		err = m.serve(ctx, rest)
	case "demo":
		err = m.demo(ctx, rest)
	case "check":
		err = m.check(ctx, rest)
	case "bench":
		err = m.bench(ctx, rest)
	case "simulate":
		err = m.simulate(ctx, rest)
	case "keys":
		err = m.keys(rest)
	case "invite":
		err = m.invite(ctx, rest)
	case "health":
		err = m.health(ctx, rest)
	case "verify-draw":
		err = m.verifyDraw(ctx, rest)
	case "rooms":
		err = m.rooms(ctx, rest)
	case "room":
		err = m.room(ctx, rest)
	case "events":
		err = m.events(ctx, rest)
	case "rules":
		err = m.rules(ctx, rest)
	case "audit":
		err = m.audit(ctx, rest)
	case "top":
		err = m.top(ctx, rest)
	case "analytics":
		err = m.analytics(ctx, rest)
	case "bench-target":
		if !isBenchChild() {
			fmt.Fprintf(m.Stderr, "usher: unknown command %q\n\n%s", cmd, usage)
			return 2
		}
		err = m.benchTarget(ctx, rest)
	case "version", "--version":
		fmt.Fprintln(m.Stdout, buildVersion())
	case "help", "-h", "--help":
		fmt.Fprint(m.Stdout, usage)
	default:
		fmt.Fprintf(m.Stderr, "usher: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errUsage), errors.Is(err, flag.ErrHelp):
		return 2
	}
	fmt.Fprintf(m.Stderr, "usher: %v\n", err)
	return 1
}

// flags returns a flag set for a subcommand that writes to m.Stderr.
func (m *Main) flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.Usage = func() {
		fmt.Fprintf(m.Stderr, "Usage: usher %s\n\nFlags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs, turning flag errors into errUsage.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return errUsage
	}
	return nil
}

func (m *Main) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
