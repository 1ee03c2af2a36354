-- room.lua: the write side shared by admit.lua and touch.lua.
--
-- ARGV 1-5 of every write script:
--   1 now (unix second)   2 now (unix ms)
--   3 the born this client saw last (0: none)
--   4 key horizon (ms)    5 clock skew tolerated (ms)
local NOW, NOW_MS = tonumber(ARGV[1]), tonumber(ARGV[2])
local KNOWN, HORIZON, SKEW = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])

-- open returns the room's meta, creating the room when its keys are gone.
-- A room whose keys are partly gone (eviction, a partial loss) is wiped
-- and created again. A new room starts a recovery (rec) when its counters
-- were lost rather than never made: this client saw them, or some keys
-- were left without being about to expire.
local function open()
  local n = redis.call('EXISTS', M, L, W, A, R)
  if n == 5 then
    local m = meta()
    local was = {}
    for k, v in pairs(m) do
      was[k] = v
    end
    m.was = was
    if m.born and m.x then
      if KNOWN > 0 and m.born ~= KNOWN then
        m.rec = math.max(m.rec or 0, m.born)
      end
      return m
    end
  end
  local lost = KNOWN > 0
  if n > 0 then
    local ttl = -1
    for _, k in ipairs(ROOM) do
      ttl = math.max(ttl, redis.call('PTTL', k))
    end
    -- Keys set to expire together that are about to: natural expiry.
    if not (ttl >= 0 and ttl < 1000) then
      lost = true
    end
    redis.call('DEL', M, L, W, A, R)
  end
  for _, k in ipairs({L, W, A, R}) do
    redis.call('HSET', k, '_', 1)
  end
  local m = {born = NOW_MS, x = NOW, wn = 0, an = 0, rn = 0, hi = 0}
  if lost then
    m.rec = NOW_MS
  end
  return m
end

-- The live waiting counts per bucket are two trees of counts around an
-- anchor bucket (base): offset d >= 0 is position d of the right tree,
-- offset d < 0 position -d-1 of the left one. A tree of n levels holds
-- positions below FAN^n; its level-l page i holds FAN counts, each the
-- waiters in FAN^l positions, packed as big-endian int32 (an all-zero
-- page is not kept). A tree gains a level when a further position comes
-- (its new root's first count is the tree's total), and has a total (rt,
-- lt), so a query or an update reads and writes one page per level:
-- O(log_FAN distance from the anchor).

-- off returns bucket b's offset from the anchor, setting the anchor when
-- unset.
local function off(m, b)
  if not m.base then
    m.base, m.rl, m.ll, m.rt, m.lt = b, 1, 1, 0, 0
  end
  return math.max(-LIMIT, math.min(LIMIT, b - m.base))
end

-- side returns the tree (0 right, 1 left) and position of offset d.
local function side(d)
  if d >= 0 then
    return 0, d
  end
  return 1, -d - 1
end

-- path returns the fields of the pages holding position pos in a tree of
-- levels levels, level 0 first, and pos's slot (1-based) in each.
local function path(t, levels, pos)
  local fs, slots = {}, {}
  local span = 1
  for lv = 0, levels - 1 do
    fs[lv + 1] = (math.floor(pos / (span * FAN)) * 8 + lv) * 2 + t
    slots[lv + 1] = math.floor(pos / span) % FAN + 1
    span = span * FAN
  end
  return fs, slots
end

-- load makes sure m.pages (the pages this run has read) holds fields.
local function load(m, fs)
  m.pages = m.pages or {}
  local want, seen = {}, {}
  for _, f in ipairs(fs) do
    if not m.pages[f] and not seen[f] then
      seen[f] = true
      want[#want + 1] = f
    end
  end
  for k, v in ipairs(hmget(L, want)) do
    m.pages[want[k]] = v or ZERO
  end
end

-- counts adds per-offset deltas to the trees.
local function counts(m, delta)
  local edits, fs = {}, {}
  local function edit(f, slot, c)
    local e = edits[f]
    if not e then
      e = {}
      edits[f] = e
      fs[#fs + 1] = f
    end
    e[slot] = (e[slot] or 0) + c
  end
  -- Grow first, while the totals are the trees' before this batch.
  for d, c in pairs(delta) do
    if c ~= 0 then
      local t, pos = side(d)
      if t == 0 then
        while FAN ^ m.rl <= pos do
          edit(m.rl * 2, 1, m.rt)
          m.rl = m.rl + 1
        end
      else
        while FAN ^ m.ll <= pos do
          edit(m.ll * 2 + 1, 1, m.lt)
          m.ll = m.ll + 1
        end
      end
    end
  end
  for d, c in pairs(delta) do
    if c ~= 0 then
      local t, pos = side(d)
      local levels = m.rl
      if t == 0 then
        m.rt = m.rt + c
      else
        m.lt = m.lt + c
        levels = m.ll
      end
      local pf, ps = path(t, levels, pos)
      for k = 1, #pf do
        edit(pf[k], ps[k], c)
      end
    end
  end
  if #fs == 0 then
    return
  end
  load(m, fs)
  local set, del = {}, {}
  for _, f in ipairs(fs) do
    local v = {struct.unpack(PAGEFMT, m.pages[f])}
    for slot, c in pairs(edits[f]) do
      v[slot] = v[slot] + c
    end
    local s = struct.pack(PAGEFMT, unpack(v, 1, FAN))
    m.pages[f] = s
    if s == ZERO then
      del[#del + 1] = f
    else
      set[#set + 1] = f
      set[#set + 1] = s
    end
  end
  for i = 1, #set, 2 * CHUNK do
    redis.call('HSET', L, unpack(slice(set, i, math.min(#set, i + 2 * CHUNK - 1))))
  end
  hdel(L, del)
end

-- prefix returns the count of positions below n in tree t.
local function prefix(m, t, n)
  local levels, total = m.rl, m.rt
  if t == 1 then
    levels, total = m.ll, m.lt
  end
  if n <= 0 then
    return 0
  end
  if n >= FAN ^ levels then
    return total
  end
  local pf, ps = path(t, levels, n)
  load(m, pf)
  local sum = 0
  for k = 1, #pf do
    if ps[k] > 1 then
      local v = {struct.unpack(fmt(ps[k] - 1), m.pages[pf[k]])}
      for slot = 1, ps[k] - 1 do
        sum = sum + v[slot]
      end
    end
  end
  return sum
end

-- before returns the live waiters in buckets before b: right of the
-- anchor, the left tree and the right positions below; left of it, the
-- left positions beyond.
local function before(m, b)
  if not m.base then
    return 0
  end
  local d = math.max(-LIMIT, math.min(LIMIT, b - m.base))
  if d >= 0 then
    return m.lt + prefix(m, 0, d)
  end
  return m.lt - prefix(m, 1, -d)
end

-- bump adds d to key k's count in s, a string of 8-byte records (key,
-- count) sorted by key, dropping a record that reaches zero, and returns
-- the new string.
local function bump(s, k, d)
  local lo, hi = 1, #s / REC
  local c, found = 0, false
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local mk, mc = struct.unpack('>i4i4', s, (mid - 1) * REC + 1)
    if mk == k then
      lo, c, found = mid, mc, true
      break
    elseif mk < k then
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  local p = (lo - 1) * REC
  local rest = p
  if found then
    rest = p + REC
  end
  c = c + d
  local rec = ''
  if c ~= 0 then
    rec = struct.pack('>i4i4', k, c)
  end
  return string.sub(s, 1, p) .. rec .. string.sub(s, rest + 1)
end

-- count returns the count of key k in s, a string of sorted records.
local function count(s, k)
  local lo, hi = 1, #s / REC
  while lo <= hi do
    local mid = math.floor((lo + hi) / 2)
    local mk, mc = struct.unpack('>i4i4', s, (mid - 1) * REC + 1)
    if mk == k then
      return mc
    elseif mk < k then
      lo = mid + 1
    else
      hi = mid - 1
    end
  end
  return 0
end

-- store_page writes s, the records of page pg of the waiting cell
-- expiring at exp (had: the page held records before), and keeps the
-- cell's index of pages in step: a page listed while it has records.
local function store_page(exp, pg, had, s)
  local f = exp .. ':' .. pg
  if s == '' then
    if had then
      redis.call('HDEL', W, f)
    end
  else
    redis.call('HSET', W, f, s)
  end
  if had ~= (s ~= '') then
    local d2 = 1
    if had then
      d2 = -1
    end
    local idx = bump(redis.call('HGET', W, exp) or '', pg, d2)
    if idx == '' then
      redis.call('HDEL', W, exp)
    else
      redis.call('HSET', W, exp, idx)
    end
  end
end

-- cell adds d to the waiters of bucket offset off in the waiting cell
-- expiring at exp: a record in the page "exp:page" of PAGE buckets, the
-- page listed in the cell's index "exp" while it has records. A count
-- never goes below zero: it returns the delta applied (0 when the cell
-- had nothing to take, a count lost with the data).
local function cell(exp, off, d)
  local pg = math.floor(off / PAGE)
  local f = exp .. ':' .. pg
  local s = redis.call('HGET', W, f) or ''
  local had = s ~= ''
  if d < 0 then
    local c = count(s, off)
    if c + d < 0 then
      d = -c
    end
    if d == 0 then
      return 0
    end
  end
  store_page(exp, pg, had, bump(s, off, d))
  return d
end

-- unwait takes one waiter of bucket b out of the waiting cell exp (if it
-- is there), recording the change in delta.
local function unwait(m, delta, exp, b)
  local d = off(m, b)
  if cell(exp, d, -1) ~= 0 then
    delta[d] = (delta[d] or 0) - 1
    m.wn = m.wn - 1
  end
end

-- unactive takes one visitor out of the active cell exp, if it holds one.
local function unactive(m, exp)
  if num(redis.call('HGET', A, exp)) > 0 then
    if redis.call('HINCRBY', A, exp, -1) == 0 then
      redis.call('HDEL', A, exp)
    end
    m.an = m.an - 1
  end
end

-- record returns the visitor's record (the ticket counted last), or nil
-- when there is none or its keep has come by now (the room's clock: the
-- key's own TTL runs on the server's clock and only frees the memory);
-- unpack_record reads one from its packed string (nil: none).
local function unpack_record(s, now)
  if not s then
    return nil
  end
  local at, c, keep, adm, from
  if #s == 25 then
    at, c, keep, adm, from = struct.unpack('>dI4I4Bd', s)
  elseif #s == 17 then
    -- Written before records kept the ticket they were counted from.
    at, c, keep, adm = struct.unpack('>dI4I4B', s)
    from = 0
  else
    return nil
  end
  if keep <= now then
    return nil
  end
  return {at = at, cell = c, admitted = adm == 1, keep = keep, from = from}
end

local function record(v, now)
  return unpack_record(redis.call('GET', v), now)
end

-- pack_record packs a record kept until the unix second keep.
local function pack_record(rc, keep)
  return struct.pack('>dI4I4Bd', rc.at, rc.cell, keep, rc.admitted and 1 or 0, rc.from or 0)
end

-- remember sets the visitor's record, kept until the unix second keep (on
-- the op's clock) or as long as it was kept already (old: the record read
-- before, or nil).
local function remember(v, rc, keep, old, now)
  if old and old.keep > keep then
    keep = old.keep
  end
  if keep <= now then
    redis.call('DEL', v)
    return
  end
  redis.call('SET', v, pack_record(rc, keep), 'PX', (keep - now) * 1000 + 1000)
end

-- latest returns the room's time to the millisecond for an op at second
-- now: the latest moment any op was decided at (m.xm, which it moves on).
-- Ops are applied in the order they reach Redis, not the order the nodes
-- decided them in: a call in flight longer than a later one's must not see
-- the rate window hold an admission the later call saw leave it. Judged
-- at its own time, it would be refused a place the later call gave to a
-- waiter behind it (a FIFO inversion).
local function latest(m, now)
  local ms = math.max(NOW_MS, now * 1000, m.xm or 0)
  m.xm = ms
  return ms
end

-- expire drops every cell whose second has come by now, and admissions
-- that left the rate window, then forgets the anchor when nobody
-- waits.
local function expire(m, now)
  local x = m.x
  if now <= x then
    return
  end
  local fields, vals = due(A, x, now)
  for k = 1, #vals do
    m.an = m.an - num(vals[k])
  end
  hdel(A, fields)

  fields, vals = due(R, x - RATE, now - RATE)
  for k = 1, #vals do
    m.rn = m.rn - num(vals[k])
  end
  local n = #fields
  for k = 1, n do
    fields[n + k] = 'l' .. fields[k]
  end
  hdel(R, fields)

  local delta = {}
  hdel(W, waiting_due(x, now, function(i, c)
    delta[i] = (delta[i] or 0) - c
    m.wn = m.wn - c
    m.lp = (m.lp or 0) + c
  end))
  counts(m, delta)

  m.x = now
  if m.wn == 0 and m.base and redis.call('HLEN', W) == 1 then
    m.base, m.rl, m.ll, m.rt, m.lt, m.pages = nil, nil, nil, nil, nil, nil
    if redis.call('HLEN', L) > 1 then
      local stale = {}
      for _, f in ipairs(redis.call('HKEYS', L)) do
        if f ~= '_' then
          stale[#stale + 1] = f
        end
      end
      hdel(L, stale)
    end
  end
end

-- trusted reports whether a visitor counted at `at` (ms) may be taken out
-- of its cell: only when it was counted in these counters. A live cell
-- from before born (beyond the clock skew) is proof of lost counters and
-- starts the recovery.
local function trusted(m, at)
  if at <= 0 then
    return false
  end
  if at >= m.born then
    return true
  end
  if at < m.born - SKEW then
    m.rec = math.max(m.rec or 0, m.born)
  end
  return false
end

-- FIELDS are the meta fields a script may change.
-- A room spread over shards (see horizon.lua, cross.lua) adds: hz, the
-- front's serving horizon (the last bucket it holds whole; nothing later
-- is admitted), hl and hle, the horizon lease's holder and its end (unix
-- ms, op clock); hx, a back shard's last bucket crossed to the front.
local FIELDS = {'born', 'x', 'xm', 'wn', 'an', 'rn', 'hi', 'rec', 'base', 'rl', 'll', 'rt', 'lt', 'lp', 'hz', 'hl',
  'hle', 'hx'}

-- finish writes the meta fields that changed and keeps the room's keys
-- alive for the horizon past the latest cell.
local function finish(m)
  local set, del = {}, {}
  local was = m.was or {}
  for _, f in ipairs(FIELDS) do
    if m[f] ~= was[f] then
      if m[f] == nil then
        del[#del + 1] = f
      else
        set[#set + 1] = f
        set[#set + 1] = m[f]
      end
    end
  end
  if #set > 0 then
    redis.call('HSET', M, unpack(set))
  end
  if #del > 0 then
    redis.call('HDEL', M, unpack(del))
  end
  local ttl = HORIZON + math.max(0, m.hi - NOW) * 1000
  if not m.was or redis.call('PTTL', M) < ttl - HORIZON / 8 then
    for _, k in ipairs(ROOM) do
      redis.call('PEXPIRE', k, ttl)
    end
  end
end
