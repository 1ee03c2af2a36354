package redis

import (
	"context"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// drawSeedKey and drawEntriesKey are the keys of a verifiable draw's seed
// (a string) and of its entries (a set), in the room's hash tag.
func (s *Store) drawSeedKey(room, id string) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:d:" + id
}

func (s *Store) drawEntriesKey(room, id string) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:de:" + id
}

// SaveDrawSeed implements usher.Store: SET NX GET with the draw's expiry,
// one call; the first writer wins.
func (s *Store) SaveDrawSeed(ctx context.Context, room, id string, seed []byte, keep time.Time) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	cmd := s.client.B().Set().Key(s.drawSeedKey(room, id)).Value(valkey.BinaryString(seed)).Nx().Get().Pxat(keep).Build()
	old, ok, err := str("save draw seed", s.client.Do(ctx, cmd))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return append([]byte(nil), seed...), nil // ours was kept
	}
	return []byte(old), nil
}

// addDrawEntryLua adds an entry to a draw's set unless it holds ARGV[3]
// entries already, and keeps the set until ARGV[2] (unix ms): KEYS[1] the
// set, ARGV[1] the entry. Returns 0 when the set is full.
var addDrawEntryLua = valkey.NewLuaScript(`
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 and redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  return 0
end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
return 1
`)

// AddDrawEntry implements usher.Store with one script call.
func (s *Store) AddDrawEntry(ctx context.Context, room, id string, entry []byte, keep time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	n, err := addDrawEntryLua.Exec(ctx, s.client, []string{s.drawEntriesKey(room, id)},
		[]string{string(entry), itoa(keep.UnixMilli()), itoa(usher.MaxDrawEntries)}).AsInt64()
	switch {
	case err != nil:
		return fail("add draw entry", err)
	case n == 0:
		return usher.Errorf(usher.EUnavailable, "redis: draw %s of room %s: %d entries, refusing more", id, room, usher.MaxDrawEntries)
	}
	return nil
}

// DrawEntries implements usher.Store: SMEMBERS, one call.
func (s *Store) DrawEntries(ctx context.Context, room, id string) ([][]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	vs, err := s.client.Do(ctx, s.client.B().Smembers().Key(s.drawEntriesKey(room, id)).Build()).AsStrSlice()
	if err != nil {
		return nil, fail("draw entries", err)
	}
	out := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = []byte(v)
	}
	return out, nil
}
