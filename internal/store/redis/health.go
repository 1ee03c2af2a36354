package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// healthKey is the hash of a room's origin health in one second: fields
// c (count), e (errors) and b<i> (latency bucket i), kept HealthKeep.
func (s *Store) healthKey(room string, sec int64) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:h:" + itoa(sec)
}

// governorKey is the hash of a room's autopilot figure: v (version), r
// (rate), c (concurrency), t (unix ms), why (reason).
func (s *Store) governorKey(room string) string {
	return "{" + s.opts.KeyPrefix + ":" + room + "}:g"
}

// addHealthLua adds counts to a second's hash and keeps it ARGV[1] ms:
// ARGV[2..] are field, increment pairs.
var addHealthLua = valkey.NewLuaScript(`
for i = 2, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i+1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`)

// AddHealth implements usher.Store with one script call.
func (s *Store) AddHealth(ctx context.Context, room string, sec int64, h usher.Health) error {
	args := []string{itoa(usher.HealthKeep.Milliseconds()), "c", itoa(h.Count), "e", itoa(h.Errors)}
	for i, n := range h.Buckets {
		if i >= usher.HealthBuckets {
			break
		}
		if n != 0 {
			args = append(args, "b"+strconv.Itoa(i), itoa(n))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	if err := addHealthLua.Exec(ctx, s.client, []string{s.healthKey(room, sec)}, args).Error(); err != nil {
		return fail("add health", err)
	}
	return nil
}

// Health implements usher.Store.
func (s *Store) Health(ctx context.Context, room string, sec int64) (usher.Health, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	m, err := s.client.Do(ctx, s.client.B().Hgetall().Key(s.healthKey(room, sec)).Build()).AsIntMap()
	if err != nil {
		if valkey.IsValkeyNil(err) {
			return usher.Health{}, nil
		}
		return usher.Health{}, fail("health", err)
	}
	var h usher.Health
	for k, v := range m {
		switch {
		case k == "c":
			h.Count = v
		case k == "e":
			h.Errors = v
		case strings.HasPrefix(k, "b"):
			i, err := strconv.Atoi(k[1:])
			if err != nil || i < 0 || i >= usher.HealthBuckets {
				continue
			}
			if len(h.Buckets) <= i {
				h.Buckets = append(h.Buckets, make([]int64, i+1-len(h.Buckets))...)
			}
			h.Buckets[i] = v
		}
	}
	return h, nil
}

// swapGovernorLua sets the figure when its version is still ARGV[1]:
// ARGV[2..5] rate, concurrency, time, reason. Returns the figure in force
// as {v, r, c, t, why}.
var swapGovernorLua = valkey.NewLuaScript(`
local v = tonumber(redis.call('HGET', KEYS[1], 'v') or '0')
if v == tonumber(ARGV[1]) then
  v = v + 1
  redis.call('HSET', KEYS[1], 'v', v, 'r', ARGV[2], 'c', ARGV[3], 't', ARGV[4], 'why', ARGV[5])
end
local f = redis.call('HMGET', KEYS[1], 'r', 'c', 't', 'why')
return {tostring(v), f[1] or '0', f[2] or '0', f[3] or '0', f[4] or ''}
`)

// Governor implements usher.Store.
func (s *Store) Governor(ctx context.Context, room string) (usher.GovernorFigure, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	vals, err := s.client.Do(ctx, s.client.B().Hmget().Key(s.governorKey(room)).Field("v", "r", "c", "t", "why").Build()).ToArray()
	if err != nil {
		return usher.GovernorFigure{}, fail("governor", err)
	}
	fields := make([]string, len(vals))
	for i, v := range vals {
		fields[i], _ = v.ToString() // nil: not set
	}
	return governorFigure("governor", fields)
}

// SwapGovernor implements usher.Store with one script call.
func (s *Store) SwapGovernor(ctx context.Context, room string, from int64, next usher.GovernorFigure) (usher.GovernorFigure, error) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res := swapGovernorLua.Exec(ctx, s.client, []string{s.governorKey(room)},
		[]string{itoa(from), itoa(int64(next.Rate)), itoa(int64(next.Concurrency)), itoa(next.At.UnixMilli()), next.Reason})
	if err := res.Error(); err != nil {
		return usher.GovernorFigure{}, fail("swap governor", err)
	}
	vals, err := res.ToArray()
	if err != nil {
		return usher.GovernorFigure{}, malformed("swap governor", "%v", err)
	}
	fields := make([]string, len(vals))
	for i, v := range vals {
		fields[i], _ = v.ToString()
	}
	return governorFigure("swap governor", fields)
}

// governorFigure reads {v, r, c, t, why}; an empty version is none.
func governorFigure(op string, f []string) (usher.GovernorFigure, error) {
	if len(f) != 5 {
		return usher.GovernorFigure{}, malformed(op, "%d fields, want 5", len(f))
	}
	if f[0] == "" {
		return usher.GovernorFigure{}, nil
	}
	num := func(s string) (int64, error) {
		if s == "" {
			return 0, nil
		}
		return strconv.ParseInt(s, 10, 64)
	}
	var g usher.GovernorFigure
	var vals [4]int64
	for i, s := range f[:4] {
		n, err := num(s)
		if err != nil {
			return usher.GovernorFigure{}, malformed(op, "field %d: %q", i, s)
		}
		vals[i] = n
	}
	g.Version, g.Rate, g.Concurrency = vals[0], int(vals[1]), int(vals[2])
	if vals[3] != 0 {
		g.At = time.UnixMilli(vals[3]).UTC()
	}
	g.Reason = f[4]
	return g, nil
}
