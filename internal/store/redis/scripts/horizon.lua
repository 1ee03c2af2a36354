-- horizon.lua: the front of a room spread over shards moves its serving
-- horizon (see shards.go). One node at a time holds the horizon lease
-- (hl, until hle, on the op clock); it takes the buckets (from, upto] in,
-- with the counts the back shards handed over (cross.lua), and sets the
-- horizon to upto. Applied once: only while the horizon is still from, so
-- a repeated call (an answer lost) changes nothing. The admission script
-- admits nobody behind the horizon.
--
-- KEYS 6-: the front's record keys of the visitors whose records the
-- back shards handed over.
--
-- ARGV 6: the node's id, 7: the lease (ms), 8: from, 9: upto, 10: apply
-- (0: only take or keep the lease), 11: the counts handed over (n), then
-- per count: cell expiry, bucket, count; then per record key, the packed
-- record handed over, kept unless the front's own is as new.
--
-- Returns {held, horizon, born, rec, applied}.
local node, lease = tonumber(ARGV[6]), tonumber(ARGV[7])
local from, upto, apply = tonumber(ARGV[8]), tonumber(ARGV[9]), ARGV[10] == '1'
local m = open()
local now = math.max(NOW, m.x)
local ms = latest(m, now)
expire(m, now)
if (m.hl or 0) ~= node and (m.hle or 0) > ms then
  finish(m)
  return {0, m.hz or 0, m.born, m.rec or 0, 0}
end
m.hl, m.hle = node, ms + lease
local applied = 0
if apply and (m.hz or 0) == from and upto > from then
  local delta = {}
  local nc = tonumber(ARGV[11])
  for k = 12, 11 + 3 * nc - 2, 3 do
    local exp, b, c = tonumber(ARGV[k]), tonumber(ARGV[k + 1]), tonumber(ARGV[k + 2])
    if exp > now and c > 0 then
      local d = off(m, b)
      cell(exp, d, c)
      delta[d] = (delta[d] or 0) + c
      m.wn = m.wn + c
      m.hi = math.max(m.hi, exp)
    end
  end
  counts(m, delta)
  for k = 6, #KEYS do
    local rc = unpack_record(ARGV[11 + 3 * nc + k - 5], now)
    local old = record(KEYS[k], now)
    if rc and (not old or old.at < rc.at) then
      remember(KEYS[k], rc, rc.keep, old, now)
    end
  end
  m.hz = upto
  applied = 1
end
finish(m)
return {1, m.hz or 0, m.born, m.rec or 0, applied}
