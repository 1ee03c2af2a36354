-- admit.lua: one admission decision (usher.Store.Admit).
--
-- ARGV 6-15: bucket, from exp (0: none), from at (ms, 0: unknown),
-- waiting exp, active exp, total active users, new users per minute,
-- concurrency hold after a loss (ms), no admit (0/1), force (0/1),
-- random (0/1), draw (in [0, 1)).
--
-- Returns {admitted, ahead, active, waiting, admitted last minute, slots,
-- born, rec}.
local bucket, fromExp, fromAt = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local waitExp, activeExp = tonumber(ARGV[9]), tonumber(ARGV[10])
local total, perMinute, hold = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local noAdmit, force = ARGV[14] == '1', ARGV[15] == '1'
local random, draw = ARGV[16] == '1', tonumber(ARGV[17])

local m = open()
local now = math.max(NOW, m.x)
expire(m, now)

local delta = {}
if fromExp > now and trusted(m, fromAt) then
  local d = off(m, bucket)
  cell(fromExp, d, -1)
  delta[d] = -1
  m.wn = m.wn - 1
end

local function slots()
  local act, rate = total - m.an, perMinute - m.rn
  if m.rec then
    if NOW_MS < m.rec + hold then
      act = 0
    end
    if NOW_MS < m.rec + RATE * 1000 then
      rate = 0
    end
  end
  return math.max(0, math.min(act, rate))
end

local ahead = math.max(0, before(m, bucket))
local free = slots()
local admitted = false
if force then
  admitted = true
elseif noAdmit or free <= 0 then
  admitted = false
elseif random then
  -- A draw: every live waiter (this one included) has the same chance.
  admitted = draw * (math.max(0, m.wn) + 1) < free
else
  admitted = ahead < free
end
if admitted then
  if activeExp > now then
    redis.call('HINCRBY', A, activeExp, 1)
    m.an = m.an + 1
    m.hi = math.max(m.hi, activeExp)
  end
  redis.call('HINCRBY', R, now, 1)
  m.rn = m.rn + 1
elseif waitExp > now then
  local d = off(m, bucket)
  cell(waitExp, d, 1)
  delta[d] = (delta[d] or 0) + 1
  m.wn = m.wn + 1
  m.hi = math.max(m.hi, waitExp)
end
counts(m, delta)
finish(m)

return {admitted and 1 or 0, ahead, math.max(0, m.an), math.max(0, m.wn), math.max(0, m.rn), slots(), m.born, m.rec or 0}
