-- common.lua: what every usher script shares. Go puts it before each
-- script's own text.
--
-- KEYS (all of one room, one hash tag):
--   1 meta      hash: born, x (latest second), xm (latest ms, see latest),
--               wn, an, rn, hi, rec; base, rl, ll, rt, lt
--   2 live      hash: page -> FAN live waiting counts (see room.lua)
--   3 waiting   hash: "exp:page" -> packed records (bucket offset, count)
--               of the waiters counted in the cell expiring at exp, PAGE
--               buckets a page; "exp" -> packed records (page, 1) of the
--               cell's pages
--   4 active    hash: expiry second -> active count
--   5 admitted  hash: second -> admissions; "l<second>" -> unix ms of the
--               second's last admission
--   6 visitor   string (admit, renew): the record of the ticket the room
--               counted last for one visitor, packed: counted-at (ms, a
--               double), cell and keep (unix seconds, uint32), admitted
--               (byte), and the counted-at of the ticket it was counted
--               from (ms, a double; 0: none; absent in 17-byte records
--               written before); the key expires when no ticket of the
--               visitor can be presented any more
--   7-13        hashes (admit): the per-client sketch's seven slices of
--               10 s (limit.Slices + 1), slice n in 7 + n % 7, "_m" -> the
--               slice held (unix s / 10), "row:cell" -> count
-- Keys 2-5 hold a marker field "_" so that they exist while the room does:
-- a room whose keys are not all there lost some of them.
local M, L, W, A, R = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local ROOM = {M, L, W, A, R}

local LIMIT = 1073741823 -- buckets further from the anchor clamp (2^30 s)
local RATE = 61        -- seconds of admissions in the rate window
local CHUNK = 1000     -- fields per HMGET/HSET/HDEL (Lua's unpack limit)
local REC = 8          -- bytes per packed record
local PAGE = 64        -- buckets per page of a waiting cell
local FAN = 64         -- counts per page of the waiting trees
local PAGEFMT = '>' .. string.rep('i4', FAN)
local ZERO = string.rep('\0', 4 * FAN)
local FMTS = {}        -- FMTS[k] unpacks k counts (see fmt)

-- fmt returns the struct format of k counts.
local function fmt(k)
  local f = FMTS[k]
  if not f then
    f = '>' .. string.rep('i4', k)
    FMTS[k] = f
  end
  return f
end

local function num(v)
  return tonumber(v) or 0
end

-- slice returns t[i..j] as a new table.
local function slice(t, i, j)
  local out = {}
  for k = i, j do
    out[#out + 1] = t[k]
  end
  return out
end

-- hmget returns the values of fields (any number of them).
local function hmget(key, fields)
  local out = {}
  for i = 1, #fields, CHUNK do
    local part = redis.call('HMGET', key, unpack(slice(fields, i, math.min(#fields, i + CHUNK - 1))))
    for k = 1, #part do
      out[#out + 1] = part[k]
    end
  end
  return out
end

-- hdel deletes fields (any number of them).
local function hdel(key, fields)
  for i = 1, #fields, CHUNK do
    redis.call('HDEL', key, unpack(slice(fields, i, math.min(#fields, i + CHUNK - 1))))
  end
end

-- hadd adds acc[field] to each numeric field of key, deleting fields that
-- reach zero.
local function hadd(key, acc)
  local fields = {}
  for f, d in pairs(acc) do
    if d ~= 0 then
      fields[#fields + 1] = f
    end
  end
  if #fields == 0 then
    return
  end
  local cur = hmget(key, fields)
  local set, del = {}, {}
  for k, f in ipairs(fields) do
    local v = num(cur[k]) + acc[f]
    if v == 0 then
      del[#del + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = v
    end
  end
  for i = 1, #set, 2 * CHUNK do
    redis.call('HSET', key, unpack(slice(set, i, math.min(#set, i + 2 * CHUNK - 1))))
  end
  hdel(key, del)
end

-- due returns the fields of key named by a second in (from, to], and
-- their values, as two lists. It walks the seconds when they are few and
-- the fields otherwise (after a long idle spell), so its cost is the
-- smaller of the two; the field walk also sweeps anything older.
local function due(key, from, to)
  local fields, vals = {}, {}
  if to <= from then
    return fields, vals
  end
  local n = redis.call('HLEN', key) - 1
  if n <= 0 then
    return fields, vals
  end
  local want = {}
  if to - from <= n + 16 then
    for s = from + 1, to do
      want[#want + 1] = s
    end
  else
    for _, f in ipairs(redis.call('HKEYS', key)) do
      local s = tonumber(f)
      if s and s <= to then
        want[#want + 1] = f
      end
    end
  end
  local got = hmget(key, want)
  for k = 1, #want do
    if got[k] then
      fields[#fields + 1] = want[k]
      vals[#vals + 1] = got[k]
    end
  end
  return fields, vals
end

-- records calls fn(key, count) for each packed record of s.
local function records(s, fn)
  for p = 1, #s - REC + 1, REC do
    local i, c = struct.unpack('>i4i4', s, p)
    fn(i, c)
  end
end

-- waiting_due calls fn(offset, count) for every waiting record of the
-- cells expiring in (from, to] and returns the fields that hold them.
local function waiting_due(from, to, fn)
  local fields, vals = due(W, from, to)
  local pages = {}
  for k = 1, #vals do
    records(vals[k], function(pg)
      pages[#pages + 1] = fields[k] .. ':' .. pg
    end)
  end
  for _, s in ipairs(hmget(W, pages)) do
    if s then
      records(s, fn)
    end
  end
  for _, f in ipairs(pages) do
    fields[#fields + 1] = f
  end
  return fields
end

-- rate_out returns the admissions of second now - RATE + 1, the oldest
-- the window holds, when the last of them is at least 60 s before ms (unix
-- ms): none of them is in (ms - 60 s, ms] any more. A second whose last
-- admission is not known counts to its last millisecond.
local function rate_out(now, ms)
  local s = now - RATE + 1
  local c = num(redis.call('HGET', R, s))
  if c <= 0 then
    return 0
  end
  local last = tonumber(redis.call('HGET', R, 'l' .. s)) or (s * 1000 + 999)
  if last <= ms - 60000 then
    return c
  end
  return 0
end

-- meta reads the meta hash into a table of numbers.
local function meta()
  local raw = redis.call('HGETALL', M)
  local m = {}
  for k = 1, #raw, 2 do
    m[raw[k]] = tonumber(raw[k + 1])
  end
  return m
end
