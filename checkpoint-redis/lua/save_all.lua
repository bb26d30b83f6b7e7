-- save_all: move several checkpoints of one group forward, each on its own, never back.
--
-- KEYS[1]          the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]          the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[2i-1]       the field of entry i: `<partition>:<subscription>`
-- ARGV[2i]         the position of entry i, a decimal string without leading zeros
--
-- The client sends at most one entry per field (it collapses repeats to the highest first)
-- and at most 1,000 entries per call by default (2,000 at most), so one call never blocks the
-- server long. The script reads every field with one HMGET and writes the ones that move with
-- one HSET: two calls into Redis instead of two per entry. (unpack() of Redis's Lua 5.1 takes
-- at most about 8,000 values, so a call must stay below 4,000 entries.)
-- Returns the number of checkpoints that moved (or were created). Entries of a retired
-- subscription are ignored (the retired set is read once per distinct subscription).
--
-- Runs after positions.lua (is_position, ahead, split_stored, subscription_of, is_retired): same value format and
-- comparison as save.lua, decimal strings, never Lua numbers.

if #ARGV == 0 or #ARGV % 2 ~= 0 then
  return redis.error_reply('ERR checkpoint: expected field and position pairs')
end

local fields, positions = {}, {}
local retired = {}
for i = 1, #ARGV, 2 do
  if not is_position(ARGV[i + 1]) then
    return redis.error_reply('ERR checkpoint: a position argument is not a decimal position')
  end
  local subscription = subscription_of(ARGV[i])
  local gone = subscription ~= nil and retired[subscription]
  if gone == nil then
    gone = is_retired(KEYS[2], subscription)
    if subscription ~= nil then
      retired[subscription] = gone
    end
  end
  if not gone then
    fields[#fields + 1] = ARGV[i]
    positions[#positions + 1] = ARGV[i + 1]
  end
end
if #fields == 0 then
  return 0
end

local stored = redis.call('HMGET', KEYS[1], unpack(fields))
local updates = {}
for j = 1, #fields do
  local position = positions[j]
  local value = stored[j]
  if not value then
    updates[#updates + 1] = fields[j]
    updates[#updates + 1] = position
  else
    local current, suffix = split_stored(value)
    if not is_position(current) then
      -- Nothing is written yet: a call with a corrupt value changes nothing.
      return redis.error_reply('ERR checkpoint: a stored value is not a checkpoint')
    end
    if ahead(position, current) then
      updates[#updates + 1] = fields[j]
      updates[#updates + 1] = position .. suffix
    end
  end
end

if #updates > 0 then
  redis.call('HSET', KEYS[1], unpack(updates))
end
return #updates / 2
