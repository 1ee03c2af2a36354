package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/usherhq/usher"
	"github.com/valkey-io/valkey-go"
)

// A room's analytics are one hash per point, {<prefix>:<room>}:am:<unix
// second> for a minute and {<prefix>:<room>}:ah:<unix second> for an hour,
// with fields "a:<name>" (added) and "x:<name>" (the largest kept). They
// share the room's hash tag, so one script merges a flush on a cluster
// too, and each expires (EXPIREAT) when its retention ends: storage stays
// bounded without any sweep.
func analyticsKey(prefix, room string, step byte, start time.Time) string {
	return "{" + prefix + ":" + room + "}:a" + string(step) + ":" + itoa(start.Unix())
}

// addAnalyticsLua merges points: ARGV[1] is the most fields a point may
// hold; then, for each key, its expiry (unix s), the number of added
// fields, their names and values, the number of max fields, their names
// and values. It first checks every point's size and merges nothing when
// one would be too large (returns {0, key index}); otherwise {1}.
var addAnalyticsLua = valkey.NewLuaScript(`
local limit = tonumber(ARGV[1])
local function each(fn)
  local i = 2
  for k = 1, #KEYS do
    local exp = ARGV[i]
    i = i + 1
    local na = tonumber(ARGV[i])
    local adds = {}
    for j = 1, na do
      adds[#adds + 1] = {ARGV[i + 2 * j - 1], ARGV[i + 2 * j]}
    end
    i = i + 2 * na + 1
    local nx = tonumber(ARGV[i])
    local maxes = {}
    for j = 1, nx do
      maxes[#maxes + 1] = {ARGV[i + 2 * j - 1], ARGV[i + 2 * j]}
    end
    i = i + 2 * nx + 1
    local r = fn(k, exp, adds, maxes)
    if r then
      return r
    end
  end
end
local bad = each(function(k, exp, adds, maxes)
  local n = redis.call('HLEN', KEYS[k])
  for _, f in ipairs(adds) do
    if redis.call('HEXISTS', KEYS[k], 'a:' .. f[1]) == 0 then n = n + 1 end
  end
  for _, f in ipairs(maxes) do
    if redis.call('HEXISTS', KEYS[k], 'x:' .. f[1]) == 0 then n = n + 1 end
  end
  if n > limit then
    return {0, k}
  end
end)
if bad then
  return bad
end
each(function(k, exp, adds, maxes)
  for _, f in ipairs(adds) do
    redis.call('HINCRBY', KEYS[k], 'a:' .. f[1], f[2])
  end
  for _, f in ipairs(maxes) do
    local cur = tonumber(redis.call('HGET', KEYS[k], 'x:' .. f[1]))
    if not cur or tonumber(f[2]) > cur then
      redis.call('HSET', KEYS[k], 'x:' .. f[1], f[2])
    end
  end
  redis.call('EXPIREAT', KEYS[k], exp)
end)
return {1}
`)

// AddAnalytics implements usher.Store with one script call: the deltas are
// first merged in Go by point, so that each point's key appears once.
func (s *Store) AddAnalytics(ctx context.Context, room string, deltas []usher.AnalyticsDelta) error {
	type pt struct {
		key      string
		exp      int64
		add, max map[string]int64
	}
	var pts []*pt
	byKey := map[string]*pt{}
	for i := range deltas {
		d := &deltas[i]
		if err := d.Check(); err != nil {
			return err
		}
		hour := d.Minute.Truncate(time.Hour)
		for _, p := range []struct {
			key string
			exp int64
		}{
			{analyticsKey(s.opts.KeyPrefix, room, 'm', d.Minute), d.Minute.Add(time.Minute + usher.AnalyticsMinuteKeep).Unix()},
			{analyticsKey(s.opts.KeyPrefix, room, 'h', hour), hour.Add(time.Hour + usher.AnalyticsHourKeep).Unix()},
		} {
			q := byKey[p.key]
			if q == nil {
				q = &pt{key: p.key, exp: p.exp, add: map[string]int64{}, max: map[string]int64{}}
				byKey[p.key] = q
				pts = append(pts, q)
			}
			for k, v := range d.Add {
				q.add[k] += v
			}
			for k, v := range d.Max {
				if old, ok := q.max[k]; !ok || v > old {
					q.max[k] = v
				}
			}
		}
	}
	if len(pts) == 0 {
		return nil
	}
	keys := make([]string, 0, len(pts))
	args := []string{strconv.Itoa(usher.AnalyticsMaxFields)}
	for _, p := range pts {
		if len(p.add)+len(p.max) > usher.AnalyticsMaxFields {
			return usher.Errorf(usher.EInvalid, "analytics: a point of room %q would hold more than %d fields", room, usher.AnalyticsMaxFields)
		}
		keys = append(keys, p.key)
		args = append(args, itoa(p.exp), strconv.Itoa(len(p.add)))
		for k, v := range p.add {
			args = append(args, k, itoa(v))
		}
		args = append(args, strconv.Itoa(len(p.max)))
		for k, v := range p.max {
			args = append(args, k, itoa(v))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	res := addAnalyticsLua.Exec(ctx, s.client, keys, args)
	if err := res.Error(); err != nil {
		return fail("add analytics", err)
	}
	arr, err := res.AsIntSlice()
	if err != nil || len(arr) == 0 {
		return malformed("add analytics", "%v", err)
	}
	if arr[0] != 1 {
		return usher.Errorf(usher.EInvalid, "analytics: a point of room %q would hold more than %d fields", room, usher.AnalyticsMaxFields)
	}
	return nil
}

// ReadAnalytics implements usher.Store with one pipelined HGETALL per
// step in the range, which is first cut to the retention (at most 1,442
// minutes or 722 hours).
func (s *Store) ReadAnalytics(ctx context.Context, room string, step time.Duration, from, to time.Time) ([]usher.AnalyticsPoint, error) {
	var sb byte
	keep := usher.AnalyticsMinuteKeep
	switch step {
	case time.Minute:
		sb = 'm'
	case time.Hour:
		sb, keep = 'h', usher.AnalyticsHourKeep
	default:
		return nil, usher.Errorf(usher.EInvalid, "analytics: step %v is neither a minute nor an hour", step)
	}
	now := time.Now()
	first := from.Add(step - 1).Truncate(step)
	if oldest := now.Add(-keep - step).Truncate(step); first.Before(oldest) {
		first = oldest
	}
	if latest := now.Add(2 * step).Truncate(step); to.After(latest) {
		to = latest
	}
	var starts []time.Time
	var cmds valkey.Commands
	for t := first; t.Before(to); t = t.Add(step) {
		starts = append(starts, t)
		cmds = append(cmds, s.client.B().Hgetall().Key(analyticsKey(s.opts.KeyPrefix, room, sb, t)).Build())
	}
	if len(cmds) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	var out []usher.AnalyticsPoint
	for i, res := range s.client.DoMulti(ctx, cmds...) {
		m, err := res.AsStrMap()
		if err != nil {
			return nil, fail("read analytics", err)
		}
		if len(m) == 0 {
			continue
		}
		p := usher.AnalyticsPoint{Start: starts[i].UTC(), Add: map[string]int64{}, Max: map[string]int64{}}
		for f, vs := range m {
			v, err := strconv.ParseInt(vs, 10, 64)
			if err != nil {
				return nil, malformed("read analytics", "field %.40q: %q", f, vs)
			}
			switch {
			case strings.HasPrefix(f, "a:"):
				p.Add[f[2:]] = v
			case strings.HasPrefix(f, "x:"):
				p.Max[f[2:]] = v
			}
		}
		out = append(out, p)
	}
	return out, nil
}
