-- save: move one checkpoint forward, never back.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]  the field: `<partition>:<subscription>`
-- ARGV[2]  the position, a decimal string without leading zeros, 0 ..= i64::MAX
--
-- Returns 1 when the stored position moved (or was created), 0 when it was already at or
-- ahead of ARGV[2], or when the subscription is retired (the save is ignored).
--
-- Runs after positions.lua (is_position, ahead, split_stored, subscription_of, is_retired):
-- the fingerprint suffix of an exclusive checkpoint is kept as it is, and positions are
-- compared exactly (see ahead).

local position = ARGV[2]
if not is_position(position) then
  return redis.error_reply('ERR checkpoint: the position argument is not a decimal position')
end

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  -- Only a checkpoint that does not exist can be one of a retired subscription: retire
  -- deletes every checkpoint of the name in the script that adds it to the retired set, and
  -- no script creates one under a name in the set. So the set is read only here, and a save
  -- that moves an existing checkpoint (the steady state) makes two calls into Redis, not three.
  if is_retired(KEYS[2], subscription_of(ARGV[1])) then
    return 0
  end
  redis.call('HSET', KEYS[1], ARGV[1], position)
  return 1
end

-- A value of at most 19 characters is a position (or corrupt); a longer one may hold a
-- fingerprint.
local current, suffix = stored, ''
if #stored > 19 then
  current, suffix = split_stored(stored)
end
if not is_position(current) then
  return redis.error_reply('ERR checkpoint: the stored value is not a checkpoint')
end
if ahead(position, current) then
  redis.call('HSET', KEYS[1], ARGV[1], position .. suffix)
  return 1
end
return 0
