-- save_all: move several checkpoints of one group forward, each on its own, never back.
--
-- KEYS[1]          the group's hash (`<prefix>:{<escaped group>}`)
-- ARGV[2i-1]       the field of entry i: `<partition>:<subscription>`
-- ARGV[2i]         the position of entry i, a decimal string without leading zeros
--
-- The client sends at most one entry per field (it collapses repeats to the highest first)
-- and at most a bounded number of entries per call, so one call never blocks the server long.
-- Returns the number of checkpoints that moved (or were created).
--
-- Same value format and comparison as save.lua: decimal strings, never Lua numbers.

local function is_position(s)
  return string.find(s, '^%d+$') ~= nil and (#s == 1 or string.byte(s, 1) ~= 48)
end

local function ahead(a, b)
  if #a ~= #b then
    return #a > #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

if #ARGV % 2 ~= 0 then
  return redis.error_reply('ERR checkpoint: expected field and position pairs')
end
-- Check every argument before writing anything, so a malformed call changes nothing.
for i = 2, #ARGV, 2 do
  if not is_position(ARGV[i]) then
    return redis.error_reply('ERR checkpoint: a position argument is not a decimal position')
  end
end

local moved = 0
for i = 1, #ARGV, 2 do
  local field, position = ARGV[i], ARGV[i + 1]
  local stored = redis.call('HGET', KEYS[1], field)
  if not stored then
    redis.call('HSET', KEYS[1], field, position)
    moved = moved + 1
  else
    local bar = string.find(stored, '|', 1, true)
    local current, suffix = stored, ''
    if bar then
      current, suffix = string.sub(stored, 1, bar - 1), string.sub(stored, bar)
    end
    if not is_position(current) then
      return redis.error_reply('ERR checkpoint: a stored value is not a checkpoint')
    end
    if ahead(position, current) then
      redis.call('HSET', KEYS[1], field, position .. suffix)
      moved = moved + 1
    end
  end
end
return moved
