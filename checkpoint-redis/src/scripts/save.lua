-- save: move one checkpoint forward, never back.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- ARGV[1]  the field: `<partition>:<subscription>`
-- ARGV[2]  the position, a decimal string without leading zeros, 0 ..= i64::MAX
--
-- Returns 1 when the stored position moved (or was created), 0 when it was already at or
-- ahead of ARGV[2].
--
-- The stored value is `<position>` or, for an exclusive checkpoint, `<position>|<fingerprint>`;
-- the fingerprint suffix is kept as it is. Positions are compared as decimal strings (length
-- first, then byte by byte) and never as Lua numbers: those are doubles and lose exactness
-- above 2^53.

local function is_position(s)
  return string.find(s, '^%d+$') ~= nil and (#s == 1 or string.byte(s, 1) ~= 48)
end

-- true when decimal string a is a higher number than b (both without leading zeros)
local function ahead(a, b)
  if #a ~= #b then
    return #a > #b
  end
  if a == b then
    return false
  end
  -- Equal lengths: the first differing digit decides. Bytes, not `a > b`, which would go
  -- through the server's locale (strcoll).
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

local position = ARGV[2]
if not is_position(position) then
  return redis.error_reply('ERR checkpoint: the position argument is not a decimal position')
end

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  redis.call('HSET', KEYS[1], ARGV[1], position)
  return 1
end

local bar = string.find(stored, '|', 1, true)
local current, suffix = stored, ''
if bar then
  current, suffix = string.sub(stored, 1, bar - 1), string.sub(stored, bar)
end
if not is_position(current) then
  return redis.error_reply('ERR checkpoint: the stored value is not a checkpoint')
end
if ahead(position, current) then
  redis.call('HSET', KEYS[1], ARGV[1], position .. suffix)
  return 1
end
return 0
