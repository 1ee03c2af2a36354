// Package selfbench is usher bench's orchestration: the self environment
// (a sample origin, usher, reference proxies and nginx on this machine),
// the flash-crowd, throughput, standing-room and autopilot scenarios, the
// target processes they start (the hidden bench-target command), and
// their results and summaries. The load generator, the virtual visitors
// and the reports are internal/bench's; cmd/usher parses the command line
// into a Config and passes in what only the product has (Product): its
// serve code.
package selfbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/admission"
	"github.com/usherhq/usher/internal/config"
)

// Product is what the bench runs of usher itself, which this package
// cannot import: cmd/usher's serve code.
type Product struct {
	// Serve runs usher on cfg until ctx is done, as usher serve does
	// (without reloading), logging to log; ready, when not nil, receives
	// the public and admin listeners' addresses once they listen.
	Serve func(ctx context.Context, cfg *config.Config, log *slog.Logger, ready func(public, admin string)) error
	// StartNode opens cfg's store and serves cfg's rooms over it on a
	// public listener until ctx is done, its goroutines in wg, as Serve
	// does (the same engine, metrics, gate and handler stack; no admin
	// listener, no reloading): for the nodes the bench runs on a shared
	// store, whose store and engine it reads. The node may be returned
	// with an error, with the store opened: the caller closes the store
	// once wg is done in either case.
	StartNode func(ctx context.Context, wg *sync.WaitGroup, cfg *config.Config, log *slog.Logger) (*Node, error)
	// Progress returns a line showing a long run's progress, each line
	// starting with prefix ("usher bench: "); nil: none shown.
	Progress func(prefix string) Progress
}

// Node is a usher node Product.StartNode started.
type Node struct {
	URL    string
	Store  usher.Store
	Engine *admission.Engine
	// ClockSpread, on a shared store, returns the most the clocks of the
	// nodes sharing it are apart as they last read them against the
	// store's (errors included), and false when fewer than two have.
	ClockSpread func(ctx context.Context) (time.Duration, bool)
}

// Progress shows a long run's progress (cmd/usher's progress line).
type Progress interface {
	Update(s string)
	Done()
}

// noProgress shows nothing.
type noProgress struct{}

func (noProgress) Update(string) {}
func (noProgress) Done()         {}

// progress returns p's progress line with prefix, or one that shows
// nothing.
func (p *Product) progress(prefix string) Progress {
	if p.Progress == nil {
		return noProgress{}
	}
	return p.Progress(prefix)
}

// ErrUsage is a bad command line of the hidden bench-target command.
var ErrUsage = errors.New("usage")

// Run runs c's scenario (c checked) and returns its result: a
// *FlashResult, *ThroughputResult, *StandingResult or *AutopilotResult.
func Run(ctx context.Context, c *Config, p *Product) (any, error) {
	switch c.Scenario {
	case "flash-crowd":
		return Flash(ctx, c, p)
	case "throughput":
		return Throughput(ctx, c, p)
	case "standing-room":
		return Standing(ctx, c, p)
	case "autopilot":
		return Autopilot(ctx, c, p)
	}
	return nil, fmt.Errorf("unknown scenario %q", c.Scenario)
}
