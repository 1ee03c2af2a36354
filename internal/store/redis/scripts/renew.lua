-- renew.lua: a session renewed, or ended (usher.Store.Renew).
--
-- ARGV 6-12: from exp (0: not counted), from at (ms), to (0: take the
-- visitor out), counted (ms), keep (unix s), end (0/1: end the session
-- whatever ticket, a revocation), lapsed (0/1: record that the session
-- ended by itself).
--
-- Returns {born, rec, replay, record at, record cell, record admitted,
-- record from}.
local V = KEYS[6]
local fromExp, fromAt, to = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local counted, keep = tonumber(ARGV[9]), tonumber(ARGV[10])
local ending, lapsed = ARGV[11] == '1', ARGV[12] == '1'

local m = open()
local now = math.max(NOW, m.x)
latest(m, now)
expire(m, now)

local rc = record(V, now)
if ending or lapsed then
  if rc and rc.admitted and (rc.cell == 0 or (lapsed and rc.cell > now)) then
    -- Ended already (revoked, or told lapsed), or (a lapse) still
    -- counted: another ticket of the visitor renewed it.
    finish(m)
    return {m.born, m.rec or 0, 1, rc.at, rc.cell, 1, rc.from or 0}
  end
  if rc and rc.admitted and rc.cell > now then
    unactive(m, rc.cell)
  end
  if rc and counted <= rc.at then
    counted = rc.at + 1
  end
  remember(V, {at = counted, cell = 0, admitted = true}, keep, rc, now)
  finish(m)
  return {m.born, m.rec or 0, 0, counted, 0, 1, 0}
end
if rc and fromAt < rc.at then
  finish(m)
  return {m.born, m.rec or 0, 1, rc.at, rc.cell, rc.admitted and 1 or 0, rc.from or 0}
end
if rc then
  -- The room's record says where the visitor is counted (a waiting
  -- record: its waiting cell expires by itself).
  if rc.admitted and rc.cell > now then
    unactive(m, rc.cell)
  end
elseif fromExp > now and trusted(m, fromAt) then
  unactive(m, fromExp)
end
local c = 0
if to > now then
  redis.call('HINCRBY', A, to, 1)
  m.an = m.an + 1
  m.hi = math.max(m.hi, to)
  c = to
end
remember(V, {at = counted, cell = c, admitted = true, from = fromAt}, math.max(keep, c), rc, now)
finish(m)

return {m.born, m.rec or 0, 0, counted, c, 1, fromAt}
