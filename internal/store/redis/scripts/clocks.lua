-- clocks: the server's time, with each node's latest clock reading.
-- KEYS[1] the clocks hash (field: node, value: "offset_us,error_us,at_s")
-- ARGV[1] this node's name ('' publishes nothing)
-- ARGV[2] its reading "offset_us,error_us"
-- ARGV[3] how long a reading is kept (seconds)
-- Returns { seconds, microseconds, node, reading, node, reading, ... }:
-- the readings of the last ARGV[3] seconds; older ones are deleted.
local t = redis.call('TIME')
local now = tonumber(t[1])
local keep = tonumber(ARGV[3])
if ARGV[1] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ',' .. t[1])
end
local out = { t[1], t[2] }
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local at = tonumber(string.match(all[i + 1], ',(%-?%d+)$'))
  if at == nil or now - at > keep then
    redis.call('HDEL', KEYS[1], all[i])
  else
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
redis.call('EXPIRE', KEYS[1], keep * 2)
return out
