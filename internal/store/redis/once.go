package redis

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/valkey-io/valkey-go"
)

// spentKey and inviteKey are the keys of a spent proof-of-work id and of an
// invite's count, in the room's hash tag.
func (s *Store) spentKey(room string, id [16]byte) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:s:" + hex.EncodeToString(id[:])
}

func (s *Store) inviteKey(room string, id [16]byte) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:i:" + hex.EncodeToString(id[:])
}

// Spend implements usher.Store: SET NX with the id's expiry, one call.
func (s *Store) Spend(ctx context.Context, room string, id [16]byte, until time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	cmd := s.client.B().Set().Key(s.spentKey(room, id)).Value("1").Nx().Pxat(until).Build()
	err := s.client.Do(ctx, cmd).Error()
	switch {
	case err == nil:
		return true, nil
	case valkey.IsValkeyNil(err):
		return false, nil // spent already
	}
	return false, fail("spend", err)
}

// useInviteLua counts one use of an invite and keeps the count until the
// invite expires: KEYS[1] the count, ARGV the most uses and the expiry (unix
// ms). Returns 1 when the use is within the most.
var useInviteLua = valkey.NewLuaScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then
  redis.call('PEXPIREAT', KEYS[1], ARGV[2])
end
if n > tonumber(ARGV[1]) then
  redis.call('DECR', KEYS[1])
  return 0
end
return 1
`)

// UseInvite implements usher.Store with one script call.
func (s *Store) UseInvite(ctx context.Context, room string, id [16]byte, max int, expires time.Time) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res := useInviteLua.Exec(ctx, s.client, []string{s.inviteKey(room, id)}, []string{itoa(int64(max)), itoa(expires.UnixMilli())})
	if err := res.Error(); err != nil {
		return false, fail("use invite", err)
	}
	n, err := res.AsInt64()
	if err != nil {
		return false, malformed("use invite", "%v", err)
	}
	return n == 1, nil
}
