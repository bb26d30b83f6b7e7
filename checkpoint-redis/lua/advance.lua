-- advance: compare-and-set an exclusive checkpoint from one position to the next, and apply
-- the caller's own hash writes in the same atomic step when (and only when) it succeeds.
--
-- KEYS[1]        the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[1+i]      the key of the caller's write i (i = 1..n; none for a plain advance)
-- ARGV[1]        the field: `<partition>:<subscription>`
-- ARGV[2]        `from`, a decimal string without leading zeros
-- ARGV[3]        `to`, a decimal string without leading zeros (ahead of `from`; checked by
--                the client)
-- ARGV[2+2i]     the field of write i
-- ARGV[3+2i]     the value of write i
--
-- Returns {'ok'} after the move, {'moved'} when the checkpoint does not exist, or
-- {'moved', <current position>} when it is not at `from`. The positions are compared as exact
-- strings, never as Lua numbers (doubles lose exactness above 2^53). Runs after positions.lua
-- (split_stored): a fingerprint suffix (`|<fingerprint>`) is kept as it is.

if #ARGV ~= 3 + 2 * (#KEYS - 1) then
  return redis.error_reply('ERR checkpoint: expected one field and value per write key')
end
if string.find(ARGV[3], '^%d+$') == nil then
  return redis.error_reply('ERR checkpoint: the to argument is not a decimal position')
end

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  return {'moved'}
end

local current, suffix = split_stored(stored)
if current ~= ARGV[2] then
  return {'moved', current}
end

redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. suffix)
for i = 2, #KEYS do
  redis.call('HSET', KEYS[i], ARGV[2 + 2 * (i - 1)], ARGV[3 + 2 * (i - 1)])
end
return {'ok'}
