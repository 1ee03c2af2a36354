-- admit.lua: one admission decision (usher.Store.Admit).
--
-- ARGV 6-: bucket, from exp (0: none), from at (ms, 0: no ticket), waiting
-- exp, active exp, total active users, new users per minute, concurrency
-- hold after a loss (ms), no admit (0/1), force (0/1), random (0/1), draw
-- (in [0, 1)), joining (0/1), counted (ms), keep (unix s), from bucket
-- (0: bucket), draw before (0: every bucket draws), now rounded up to
-- the ms, client limit per minute (0: none), refuse (0/1), back bucket,
-- take over (ms: a waiting record counted from the ticket presented at or
-- before it is taken over; 0: never), take over cell (the record's cell
-- expires at or before it; 0: any), network limit per minute (0: none),
-- unproven (0/1: a new visitor without a proof of work, admitted into a
-- free slot or not counted at all), then the client's Depth sketch cells,
-- then (with a network limit) the network's Depth cells, counted in fields
-- of their own ('n' before the row).
--
-- Returns {admitted, ahead, active, waiting, admitted last minute, slots,
-- born, rec, replay, record at, record cell, record admitted, over,
-- record from, took over, unproven}.
local V = KEYS[6]
-- KEYS[7] to KEYS[7 + SLICES]: the per-client sketch's slices (limit.Slices
-- + 1 of limit.SliceSeconds), slice n in KEYS[7 + n % (SLICES + 1)].
local SLICES, SLICE_MS = 6, 10000
local bucket, fromExp, fromAt = tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local waitExp, activeExp = tonumber(ARGV[9]), tonumber(ARGV[10])
local total, perMinute, hold = tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local noAdmit, force = ARGV[14] == '1', ARGV[15] == '1'
local random, draw = ARGV[16] == '1', tonumber(ARGV[17])
local joining, counted, keep = ARGV[18] == '1', tonumber(ARGV[19]), tonumber(ARGV[20])
local fromBucket, drawBefore = tonumber(ARGV[21]), tonumber(ARGV[22])
local stamp = tonumber(ARGV[23])
local clientMax, refuse, back = tonumber(ARGV[24]), ARGV[25] == '1', tonumber(ARGV[26])
local takeOver, takeOverCell = tonumber(ARGV[27]), tonumber(ARGV[28])
local netMax = tonumber(ARGV[29])
local unproven = ARGV[30] == '1'
local CELLS = 31 -- the first sketch cell's ARGV
local DEPTH = 4 -- limit.Depth
if fromBucket == 0 then
  fromBucket = bucket
end

local m = open()
local now = math.max(NOW, m.x)
local ms = latest(m, now)
expire(m, now)
-- The oldest second's admissions that left the window (see rate_out):
-- they stay counted in m.rn until the second expires.
local out = rate_out(now, ms)

local function slots()
  local act, rate = total - m.an, perMinute - (m.rn - out)
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

local function result(admitted, ahead, replay, rc, over, took, held)
  local at, c, adm, from = 0, 0, 0, 0
  if rc then
    at, c, adm, from = rc.at, rc.cell, rc.admitted and 1 or 0, rc.from or 0
  end
  return {admitted and 1 or 0, ahead, math.max(0, m.an), math.max(0, m.wn), math.max(0, m.rn - out),
    slots(), m.born, m.rec or 0, replay and 1 or 0, at, c, adm, over and 1 or 0, from, took and 1 or 0,
    held and 1 or 0}
end

-- take counts one new ticket for the client, and for its network when
-- there is a network limit, unless a count over the sliding minute (every
-- ticket of the last SLICES slices and the current one, as limit.TakeAll)
-- has reached its limit, and reports whether it was within. A ticket over
-- either limit is counted in neither.
local function take()
  local slice = math.max(math.floor(NOW_MS / SLICE_MS), SLICES)
  local n = SLICES + 1
  local cur = KEYS[7 + slice % n]
  if tonumber(redis.call('HGET', cur, '_m')) ~= slice then
    redis.call('DEL', cur)
    redis.call('HSET', cur, '_m', slice)
    redis.call('PEXPIRE', cur, n * SLICE_MS + 10000)
  end
  -- One HMGET a slice reads the slice it holds ('_m', first) and the
  -- cells: the client's rows 2 .. DEPTH + 1, the network's after.
  local fields = { '_m' }
  for k = CELLS, #ARGV do
    local row = (k - CELLS) % DEPTH
    if k - CELLS < DEPTH then
      fields[#fields + 1] = row .. ':' .. ARGV[k]
    else
      fields[#fields + 1] = 'n' .. row .. ':' .. ARGV[k]
    end
  end
  local est = {}
  for k = 2, #fields do
    est[k] = 0
  end
  for s = slice - SLICES, slice do
    local v = redis.call('HMGET', KEYS[7 + s % n], unpack(fields))
    if tonumber(v[1]) == s then
      for k = 2, #fields do
        est[k] = est[k] + num(v[k])
      end
    end
  end
  local tiers = { { first = 2, max = clientMax } }
  if #fields > DEPTH + 1 then
    tiers[2] = { first = DEPTH + 2, max = netMax }
  end
  for _, t in ipairs(tiers) do
    t.least = math.huge
    for k = t.first, t.first + DEPTH - 1 do
      t.least = math.min(t.least, est[k])
    end
    if t.least >= t.max then
      return false
    end
  end
  for _, t in ipairs(tiers) do
    for k = t.first, t.first + DEPTH - 1 do
      if est[k] <= t.least then
        redis.call('HINCRBY', cur, fields[k], 1)
      end
    end
  end
  return true
end

local rc = record(V, now)
-- The ticket a waiting record was counted from, whose answer was lost,
-- takes the record over once the op allows it.
local took = rc and fromAt < rc.at and takeOver > 0 and not rc.admitted and fromAt > 0 and
  fromAt == rc.from and rc.at <= takeOver and (takeOverCell == 0 or rc.cell <= takeOverCell)
if rc and (fromAt < rc.at or rc.admitted) and not took then
  -- A ticket older than the one counted last, or any waiting ticket of a
  -- visitor the room admitted: a replay. Nothing changes.
  local ahead = math.max(0, before(m, bucket))
  finish(m)
  return result(rc.admitted, ahead, true, rc, false, false)
end

local delta = {}
if rc then
  if rc.cell > now then
    unwait(m, delta, rc.cell, bucket)
  end
elseif fromExp > now and trusted(m, fromAt) then
  unwait(m, delta, fromExp, fromBucket)
end
counts(m, delta)
delta = {}

local ahead = math.max(0, before(m, bucket))
local free = slots()
local newcomer = fromAt == 0 and not rc
local over = false
local limited = newcomer and clientMax > 0
if limited and not unproven then
  over = not take()
end
local admitted = false
if over then
  admitted = false
elseif force then
  -- Past the limits (passthrough), but an unproven visitor only into a
  -- free slot.
  admitted = (not unproven) or free > 0
elseif noAdmit or free <= 0 then
  admitted = false
elseif joining then
  admitted = math.max(0, m.wn) == 0
elseif random then
  -- A draw: every live waiter (this one included) has the same chance;
  -- joining visitors and those at the back of the line take no share.
  local live = math.max(0, m.wn)
  if drawBefore > 0 then
    live = math.max(0, before(m, drawBefore))
  end
  admitted = draw * (live + 1) < free
else
  -- In a room spread over shards, only the line up to the serving horizon
  -- is here whole: nobody behind it is admitted (horizon.lua).
  admitted = ahead < free and not (m.hz and bucket > m.hz)
end
if unproven and admitted and limited then
  -- An unproven visitor counts against its client only once it takes a
  -- place.
  over = not take()
  admitted = not over
end
if unproven and not admitted then
  -- It would wait: it pays first. Nothing counted, nothing remembered.
  finish(m)
  return result(false, ahead, false, nil, false, false, true)
end

local next = nil
if over and refuse then
  -- No ticket: nothing counted, nothing remembered.
elseif admitted then
  local c = 0
  if activeExp > now then
    redis.call('HINCRBY', A, activeExp, 1)
    m.an = m.an + 1
    m.hi = math.max(m.hi, activeExp)
    c = activeExp
  end
  redis.call('HINCRBY', R, now, 1)
  local last = tonumber(redis.call('HGET', R, 'l' .. now)) or 0
  redis.call('HSET', R, 'l' .. now, math.max(last, stamp, ms))
  m.rn = m.rn + 1
  next = {at = counted, cell = c, admitted = true, from = fromAt}
  remember(V, next, math.max(keep, c), rc, now)
else
  local b, c = bucket, 0
  if over then
    b = back
  end
  if waitExp > now then
    local d = off(m, b)
    cell(waitExp, d, 1)
    delta[d] = (delta[d] or 0) + 1
    m.wn = m.wn + 1
    m.hi = math.max(m.hi, waitExp)
    c = waitExp
  end
  if not newcomer then
    -- Remembered from its first check-in on: a visitor that never comes
    -- back costs no record.
    next = {at = counted, cell = c, admitted = false, from = fromAt}
    remember(V, next, keep, rc, now)
  end
  if over then
    counts(m, delta)
    delta = {}
    ahead = math.max(0, before(m, back))
  end
end
counts(m, delta)
finish(m)

return result(admitted, ahead, false, next, over, took)
