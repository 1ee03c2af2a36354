-- moves.lua: waiters' check-ins far back in the line, answered by a node
-- from its view of the room and applied here later, many in one call (see
-- farback.go). Each moves a waiter's count to its new cell as admit.lua
-- does for a check-in that is not admitted, with the same record checks:
-- a ticket older than the visitor's record (a copy, a replay), or any
-- ticket of an admitted visitor, changes nothing. A new visitor's (from at
-- 0, no record) is counted and not remembered, as admit.lua does.
--
-- KEYS 6-: the visitors' record keys, one a move; on a back shard of a
-- room spread over shards, each followed by its bucket's records (a hash:
-- visitor id -> packed record, kept while the room's keys are, each
-- record read as expired after its keep), where the back shard keeps its
-- waiters' records instead, and which it hands over with the bucket's
-- counts (cross.lua).
-- ARGV 6-: per move, 8 values: bucket, from exp (0: none), from at (ms),
-- waiting exp, counted (ms), keep (unix s), take over (ms; 0: never),
-- take over cell (0: any).
--
-- On a back shard of a room spread over shards, a move of a bucket the
-- front has taken over (at or before hx, see cross.lua) is refused: the
-- node applies it on the front.
--
-- Returns {applied, replays, born, rec, then the refused moves' indices
-- (1-based)}.
local m = open()
local now = math.max(NOW, m.x)
latest(m, now)
expire(m, now)
local delta = {}
local applied, replays = 0, 0
local refused = {}
local ttls = {} -- the buckets' records whose TTL this batch set
-- The moves' cell changes, gathered per cell and bucket offset (takes and
-- adds apart) and applied once per page of a cell below: a batch's moves
-- mostly share a few cells.
local acc = {}
local function add(exp, o, d)
  local e = acc[exp]
  if not e then
    e = {}
    acc[exp] = e
  end
  local a = e[o]
  if not a then
    a = {0, 0}
    e[o] = a
  end
  if d < 0 then
    a[1] = a[1] + d
  else
    a[2] = a[2] + d
  end
end
local n = (#ARGV - 5) / 8
local per = 1
if n > 0 then
  per = (#KEYS - 5) / n
end
for i = 0, n - 1 do
  local V = KEYS[6 + i * per]
  local I, vid = nil, nil
  if per == 2 then
    I, vid = KEYS[7 + i * per], string.sub(V, -8)
  end
  local a = 6 + i * 8
  local bucket, fromExp, fromAt = tonumber(ARGV[a]), tonumber(ARGV[a + 1]), tonumber(ARGV[a + 2])
  local waitExp, counted, keep = tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4]), tonumber(ARGV[a + 5])
  local takeOver, takeOverCell = tonumber(ARGV[a + 6]), tonumber(ARGV[a + 7])
  local rc = nil
  if m.hx and bucket <= m.hx then
    refused[#refused + 1] = i + 1
  elseif I then
    rc = unpack_record(redis.call('HGET', I, vid), now)
  else
    rc = record(V, now)
  end
  local took = rc and fromAt < rc.at and takeOver > 0 and not rc.admitted and fromAt > 0 and
    fromAt == rc.from and rc.at <= takeOver and (takeOverCell == 0 or rc.cell <= takeOverCell)
  if m.hx and bucket <= m.hx then
    -- refused: the front holds the bucket now
  elseif (rc and (fromAt < rc.at or rc.admitted) and not took) or (rc and counted <= rc.at) then
    replays = replays + 1
  else
    if rc then
      if rc.cell > now then
        add(rc.cell, off(m, bucket), -1)
      end
    elseif fromExp > now and trusted(m, fromAt) then
      add(fromExp, off(m, bucket), -1)
    end
    local c = 0
    if waitExp > now then
      add(waitExp, off(m, bucket), 1)
      m.hi = math.max(m.hi, waitExp)
      c = waitExp
    end
    if fromAt > 0 or rc then
      local nrc = {at = counted, cell = c, admitted = false, from = fromAt}
      if not I then
        remember(V, nrc, keep, rc, now)
      else
        if rc and rc.keep > keep then
          keep = rc.keep
        end
        if keep > now then
          redis.call('HSET', I, vid, pack_record(nrc, keep))
          if not rc and not ttls[I] then
            -- A visitor's first record here: the bucket's records live
            -- as long as the room's keys (finish), past any keep.
            redis.call('PEXPIRE', I, HORIZON + math.max(0, m.hi - now) * 1000)
            ttls[I] = true
          end
        elseif rc then
          redis.call('HDEL', I, vid)
        end
      end
    end
    applied = applied + 1
  end
end
-- As cell() does, one page at a time: a take never goes below zero (a
-- count lost with the data), and the trees get what was applied.
for exp, offs in pairs(acc) do
  local pages = {}
  for o, a in pairs(offs) do
    local pg = math.floor(o / PAGE)
    pages[pg] = pages[pg] or {}
    pages[pg][o] = a
  end
  for pg, p in pairs(pages) do
    local f = exp .. ':' .. pg
    local s = redis.call('HGET', W, f) or ''
    local had = s ~= ''
    for o, a in pairs(p) do
      local d = a[1]
      if d < 0 then
        local c = count(s, o)
        if c + d < 0 then
          d = -c
        end
      end
      d = d + a[2]
      if d ~= 0 then
        s = bump(s, o, d)
        delta[o] = (delta[o] or 0) + d
        m.wn = m.wn + d
      end
    end
    store_page(exp, pg, had, s)
  end
end
counts(m, delta)
finish(m)
local out = {applied, replays, m.born, m.rec or 0}
for _, i in ipairs(refused) do
  out[#out + 1] = i
end
return out
