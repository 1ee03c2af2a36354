package redis

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/usherhq/usher"
	"github.com/usherhq/usher/internal/limit"
	"github.com/valkey-io/valkey-go"
)

// roomKeys returns the keys of a room, in the order the scripts take them
// (see scripts/common.lua), and the prefix of its visitors' record keys.
// They share the hash tag {<prefix>:<room>}.
func roomKeys(prefix, room string) (keys []string, visitorPrefix string) {
	tag := "{" + prefix + ":" + room + "}:"
	keys = []string{tag + "m", tag + "l", tag + "w", tag + "a", tag + "r"}
	for i := range limit.Slices + 1 {
		keys = append(keys, tag+"s"+strconv.Itoa(i)) // the client sketch's slices
	}
	return keys, tag + "v:"
}

// visitorKey returns the key of a visitor's record in a room: the prefix
// and the id's 8 bytes as they are (keys are binary-safe; hex would take
// twice the room in every record).
func visitorKey(visitorPrefix string, v [8]byte) string {
	return visitorPrefix + string(v[:])
}

// ringKey is the key of the key ring.
func (s *Store) ringKey() string { return s.opts.KeyPrefix + ":keys" }

// storedKey is one key of the ring as it is kept: JSON with the secret in
// base64.
type storedKey struct {
	ID     string `json:"id"`
	Secret []byte `json:"secret"`
}

func encodeRing(ring []usher.Key) (string, error) {
	out := make([]storedKey, 0, len(ring))
	for _, k := range ring {
		out = append(out, storedKey{ID: k.ID, Secret: k.Secret})
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func decodeRing(op, s string) ([]usher.Key, error) {
	var in []storedKey
	if err := json.Unmarshal([]byte(s), &in); err != nil {
		return nil, malformed(op, "key ring: %v", err)
	}
	var ring []usher.Key
	for _, k := range in {
		ring = append(ring, usher.Key{ID: k.ID, Secret: k.Secret})
	}
	return ring, nil
}

// LoadKeys implements usher.Store: the ring under <prefix>:keys, or an
// empty ring when none was ever saved.
func (s *Store) LoadKeys(ctx context.Context) ([]usher.Key, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	v, ok, err := str("load keys", s.client.Do(ctx, s.client.B().Get().Key(s.ringKey()).Build()))
	if err != nil || !ok {
		return nil, err
	}
	return decodeRing("load keys", v)
}

// SaveKeys implements usher.Store: it keeps ring under <prefix>:keys
// unless a ring is there already (SET NX), and returns the ring kept.
func (s *Store) SaveKeys(ctx context.Context, ring []usher.Key) ([]usher.Key, error) {
	v, err := encodeRing(ring)
	if err != nil {
		return nil, usher.Errorf(usher.EInvalid, "redis: save keys: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	old, ok, err := str("save keys", s.client.Do(ctx, s.client.B().Set().Key(s.ringKey()).Value(v).Nx().Get().Build()))
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return decodeRing("save keys", v) // ours was kept
	}
	return decodeRing("save keys", old)
}

// str reads a string reply; ok is false for a nil reply.
func str(op string, res valkey.ValkeyResult) (v string, ok bool, err error) {
	if err := res.Error(); err != nil {
		if valkey.IsValkeyNil(err) {
			return "", false, nil
		}
		return "", false, fail(op, err)
	}
	v, err = res.ToString()
	if err != nil {
		return "", false, malformed(op, "%v", err)
	}
	return v, true, nil
}
