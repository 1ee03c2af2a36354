package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// source is a script's text and its SHA-1, sent by hand: EVALSHA, or EVAL
// when the server does not have it (see run).
type source struct {
	text, sha string
	readOnly  bool // EVALSHA_RO and EVAL_RO
}

func newSource(text string) source {
	return source{text: text, sha: sha(text)}
}

// sha returns the hex SHA-1 of text, the name the server gives a script.
func sha(text string) string {
	sum := sha1.Sum([]byte(text))
	return hex.EncodeToString(sum[:])
}

// run runs the room script src: EVALSHA, then EVAL when the server does
// not have the script (its first use, or after a restart, a failover or
// SCRIPT FLUSH). Each of the two round trips has the store's timeout of
// its own, within ctx: a server whose answers come late, but within the
// timeout, costs such a call two round trips of time, never a failure
// (with a single timeout over both, every call that met the script
// missing failed once replies took half the timeout: slow looked down).
//
// With Options.WaitReplicas, WAIT follows a write script on the same
// connection (WAIT counts the replicas that have the connection's
// writes), and the call fails as unavailable when fewer replicas than
// that acknowledged it within half the timeout: a visitor is then told of
// an admission or a renewal only once a replica has its count, so a
// failover cannot lose it. The count stays on the primary either way.
func (s *Store) run(ctx context.Context, src source, keys, args []string) valkey.ValkeyResult {
	res := s.roundTrip(ctx, src, false, keys, args)
	if verr, ok := valkey.IsValkeyErr(res.Error()); ok && verr.IsNoScript() {
		res = s.roundTrip(ctx, src, true, keys, args)
	}
	return res
}

// roundTrip sends src once, by its SHA-1 or (text) with its text, within
// the store's timeout, and WAITs after it as run says.
func (s *Store) roundTrip(ctx context.Context, src source, text bool, keys, args []string) valkey.ValkeyResult {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	c := s.client
	var cmd valkey.Completed
	switch n := int64(len(keys)); {
	case text && src.readOnly:
		cmd = c.B().EvalRo().Script(src.text).Numkeys(n).Key(keys...).Arg(args...).Build()
	case text:
		cmd = c.B().Eval().Script(src.text).Numkeys(n).Key(keys...).Arg(args...).Build()
	case src.readOnly:
		cmd = c.B().EvalshaRo().Sha1(src.sha).Numkeys(n).Key(keys...).Arg(args...).Build()
	default:
		cmd = c.B().Evalsha().Sha1(src.sha).Numkeys(n).Key(keys...).Arg(args...).Build()
	}
	n := s.opts.WaitReplicas
	if n <= 0 || src.readOnly {
		return c.Do(ctx, cmd)
	}
	ms := max(1, s.opts.Timeout.Milliseconds()/2)
	res := c.DoMulti(ctx, cmd, c.B().Wait().Numreplicas(int64(n)).Timeout(ms).Build())
	if res[0].Error() != nil {
		return res[0]
	}
	got, err := res[1].AsInt64()
	if err != nil {
		return valkey.NewErrorResult(err)
	}
	if got < int64(n) {
		return valkey.NewErrorResult(replicasError{got: got, want: int64(n), ms: ms})
	}
	return res[0]
}

// replicasError says that too few replicas acknowledged a write.
type replicasError struct {
	got, want, ms int64
}

func (e replicasError) Error() string {
	return fmt.Sprintf("%d of the %d replicas wait_replicas asks for acknowledged the write within %d ms", e.got, e.want, e.ms)
}
