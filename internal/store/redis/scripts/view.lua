-- view.lua: what a node caches of a room to answer check-ins far back in
-- its line without a call of their own (see farback.go): the counters and
-- the live waiting counts per bucket, after expiring what is due. A room
-- that does not exist is not created.
--
-- ARGV 6: the most pages of counts to return (beyond: none, and the node
-- answers every check-in with a call of its own).
--
-- Returns {exists, active, waiting, admitted last minute, born, rec, has
-- base, base, pages returned (-1: too many), serving horizon (0: none),
-- horizon lease holder, its end (unix ms), last bucket crossed to the
-- front (a back shard's; 0: none), then per page its field and
-- its FAN packed counts}. Only the pages of the trees' level 0 are sent:
-- field f holds positions (f // 16) * FAN .. + FAN - 1 of tree f % 2
-- (see path in room.lua).
if redis.call('EXISTS', M) == 0 then
  return {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
end
local most = tonumber(ARGV[6])
local m = open()
local now = math.max(NOW, m.x)
expire(m, now)
local out = rate_out(now, latest(m, now))
finish(m)
local res = {1, math.max(0, m.an), math.max(0, m.wn), math.max(0, m.rn - out), m.born, m.rec or 0, 0, 0, 0,
  m.hz or 0, m.hl or 0, m.hle or 0, m.hx or 0}
if not m.base then
  return res
end
res[7], res[8] = 1, m.base
-- Level 0 of both trees: fields whose (f // 2) % 8 is 0.
if redis.call('HLEN', L) > 2 * most + 16 then
  res[9] = -1
  return res
end
local raw = redis.call('HGETALL', L)
local n = 0
for k = 1, #raw, 2 do
  local f = tonumber(raw[k])
  if f and math.floor(f / 2) % 8 == 0 then
    n = n + 1
    if n > most then
      res[9] = -1
      for j = #res, 14, -1 do
        res[j] = nil
      end
      return res
    end
    res[#res + 1] = f
    res[#res + 1] = raw[k + 1]
  end
end
res[9] = n
return res
