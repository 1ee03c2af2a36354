-- stats.lua: a room's counters at a second, read only (usher.Store.Stats).
-- Cells that are due but not yet expired are left out of the counts.
--
-- ARGV 1: now (unix second), 2: now (unix ms). Returns {active, waiting,
-- admitted last minute, lapsed waiters}.
local now, nowMs = tonumber(ARGV[1]), tonumber(ARGV[2])
if redis.call('EXISTS', M) == 0 then
  return {0, 0, 0, 0}
end
local m = meta()
local x = m.x or now
-- As the writes judge it: at the latest time an op was decided at.
now = math.max(now, x)
nowMs = math.max(nowMs, now * 1000, m.xm or 0)
local an, wn, rn, lp = m.an or 0, m.wn or 0, m.rn or 0, m.lp or 0
if now > x then
  local _, vals = due(A, x, now)
  for k = 1, #vals do
    an = an - num(vals[k])
  end
  _, vals = due(R, x - RATE, now - RATE)
  for k = 1, #vals do
    rn = rn - num(vals[k])
  end
  waiting_due(x, now, function(_, c)
    wn = wn - c
    lp = lp + c
  end)
end
rn = rn - rate_out(now, nowMs)
return {math.max(0, an), math.max(0, wn), math.max(0, rn), lp}
