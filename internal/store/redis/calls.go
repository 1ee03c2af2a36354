package redis

import (
	"context"
	"sync/atomic"

	"github.com/valkey-io/valkey-go"
)

// Calls returns the number of commands this Store has sent to the server
// since Open, each one a request and its reply (a round trip, though the
// client may pipeline concurrent ones on one connection): one per Admit
// (none for a check-in or new visitor far back in a long line: a view
// read a second and a batch call every 100 ms instead, see farback.go),
// Touch, Stats, LoadKeys and SaveKeys, the PING of Open, and the retry of a
// script the server did not have cached (EVALSHA, then EVAL). Touch with
// nothing to change sends none.
func (s *Store) Calls() int64 { return s.calls.Load() }

// counting is the client a Store uses: it counts the commands sent.
type counting struct {
	valkey.Client
	n *atomic.Int64
}

func (c counting) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c counting) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}
