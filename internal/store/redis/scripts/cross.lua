-- cross.lua: on a back shard of a room spread over shards, hands the
-- front the buckets (from, upto] (see horizon.lua and shards.go). It marks
-- them crossed (hx), so that a later move of theirs is refused here and
-- applied on the front, and returns their live waiting counts, each with
-- the second its cell expires at. The counts stay here until their cells
-- expire (a node's view leaves out the buckets the front holds), so a call
-- repeated after a failure returns the same counts: the front takes them
-- in once, by its horizon.
--
-- KEYS 6-: the records (hashes, see moves.lua) of the buckets crossing
-- that the node's view shows here: their records are handed over too, so
-- that the front knows each waiter's last ticket and cell (a copy or an
-- old ticket of theirs is a replay there as here).
--
-- ARGV 6: from (the front's horizon: buckets after it), 7: upto.
--
-- Returns {born, rec, counts (n), then per count: cell expiry, bucket,
-- count; then per record: visitor id, packed record}.
local from, upto = tonumber(ARGV[6]), tonumber(ARGV[7])
local m = open()
local now = math.max(NOW, m.x)
latest(m, now)
expire(m, now)
m.hx = math.max(m.hx or 0, upto)
local out = {m.born, m.rec or 0, 0}
if m.base and m.wn > 0 and upto > from then
  local lo = math.max(-LIMIT, math.min(LIMIT, from + 1 - m.base))
  local hi = math.max(-LIMIT, math.min(LIMIT, upto - m.base))
  local plo, phi = math.floor(lo / PAGE), math.floor(hi / PAGE)
  -- The live cells' indexes of pages; only the pages of (from, upto].
  local cells, idx = due(W, now, m.hi)
  local want, exps = {}, {}
  for k = 1, #idx do
    records(idx[k], function(pg)
      if pg >= plo and pg <= phi then
        want[#want + 1] = cells[k] .. ':' .. pg
        exps[#exps + 1] = tonumber(cells[k])
      end
    end)
  end
  local pages = hmget(W, want)
  for k = 1, #want do
    if pages[k] then
      records(pages[k], function(o, c)
        if o >= lo and o <= hi and c > 0 then
          out[#out + 1] = exps[k]
          out[#out + 1] = m.base + o
          out[#out + 1] = c
        end
      end)
    end
  end
end
out[3] = (#out - 3) / 3
for k = 6, #KEYS do
  local raw = redis.call('HGETALL', KEYS[k])
  for j = 1, #raw, 2 do
    local rc = unpack_record(raw[j + 1], now)
    if rc and rc.cell > now then
      out[#out + 1] = raw[j]
      out[#out + 1] = raw[j + 1]
    end
  end
end
finish(m)
return out
