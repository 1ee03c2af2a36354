package redis

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/valkey-io/valkey-go"
)

// source is a write script's text and its SHA-1, for sending it by hand
// (EVALSHA, or EVAL when the server does not have it) in a pipeline with
// WAIT.
type source struct {
	text, sha string
}

func newSource(text string) source {
	sum := sha1.Sum([]byte(text))
	return source{text: text, sha: hex.EncodeToString(sum[:])}
}

// execWrite runs the write script lua (src its text): an admission or a
// renewal. With Options.WaitReplicas, WAIT follows it on the same
// connection (WAIT counts the replicas that have the connection's
// writes), and the call fails as unavailable when fewer replicas than
// that acknowledged it within half the timeout: a visitor is then told of
// an admission or a renewal only once a replica has its count, so a
// failover cannot lose it. The count stays on the primary either way.
func (s *Store) execWrite(ctx context.Context, lua *valkey.Lua, src source, keys, args []string) valkey.ValkeyResult {
	n := s.opts.WaitReplicas
	if n <= 0 {
		return lua.Exec(ctx, s.client, keys, args)
	}
	ms := max(1, s.opts.Timeout.Milliseconds()/2)
	c := s.client
	res := c.DoMulti(ctx,
		c.B().Evalsha().Sha1(src.sha).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(),
		c.B().Wait().Numreplicas(int64(n)).Timeout(ms).Build())
	if verr, ok := valkey.IsValkeyErr(res[0].Error()); ok && verr.IsNoScript() {
		res = c.DoMulti(ctx,
			c.B().Eval().Script(src.text).Numkeys(int64(len(keys))).Key(keys...).Arg(args...).Build(),
			c.B().Wait().Numreplicas(int64(n)).Timeout(ms).Build())
	}
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
