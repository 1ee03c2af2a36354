-- peek.lua: the live waiters ahead of a bucket and the room's counters,
-- after expiring what is due (usher.Store.Peek). A room that does not
-- exist is not created.
--
-- ARGV 6: bucket. Returns {ahead, active, waiting, admitted last minute}.
if redis.call('EXISTS', M) == 0 then
  return {0, 0, 0, 0}
end
local bucket = tonumber(ARGV[6])
local m = open()
local now = math.max(NOW, m.x)
expire(m, now)
local ahead = math.max(0, before(m, bucket))
local out = rate_out(now, latest(m, now))
finish(m)
return {ahead, math.max(0, m.an), math.max(0, m.wn), math.max(0, m.rn - out)}
