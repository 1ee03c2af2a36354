-- touch.lua: a batch of activity moves (usher.Store.Touch), aggregated by
-- cell before sending.
--
-- ARGV 6: the number n of out-groups; then n triples (exp, count, earliest
-- counted-at ms) to take out of active cells; then pairs (exp, count) to
-- put in. A group is taken out only when all its visitors were counted in
-- these counters (its earliest counted-at is not before born).
--
-- Returns {born, rec}.
local m = open()
local now = math.max(NOW, m.x)
expire(m, now)

local acc = {}
local n = tonumber(ARGV[6])
local k = 7
for _ = 1, n do
  local exp, c, at = tonumber(ARGV[k]), tonumber(ARGV[k + 1]), tonumber(ARGV[k + 2])
  k = k + 3
  if exp > now and trusted(m, at) then
    acc[exp] = (acc[exp] or 0) - c
    m.an = m.an - c
  end
end
while k < #ARGV do
  local exp, c = tonumber(ARGV[k]), tonumber(ARGV[k + 1])
  k = k + 2
  if exp > now then
    acc[exp] = (acc[exp] or 0) + c
    m.an = m.an + c
    m.hi = math.max(m.hi, exp)
  end
end
hadd(A, acc)
finish(m)

return {m.born, m.rec or 0}
