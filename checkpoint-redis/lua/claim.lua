-- claim: load an exclusive checkpoint, creating it on first use, guarded by a fingerprint.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]  the field: `<partition>:<subscription>`
-- ARGV[2]  the fingerprint of the claiming query, 64 lowercase hex digits
-- ARGV[3]  the initial position, a decimal string without leading zeros
--
-- Returns {'ok', <position>} with the stored position (ARGV[3] when it was just created), or
-- {'changed', <stored fingerprint>} when the checkpoint was claimed under another fingerprint.
-- A checkpoint saved only monotonically (a value without `|`) adopts ARGV[2] and keeps its
-- position. Returns {'retired'} (and creates nothing) when the subscription is retired.
--
-- Runs after positions.lua (split_stored, subscription_of, is_retired).

if is_retired(KEYS[2], subscription_of(ARGV[1])) then
  return {'retired'}
end

local stored = redis.call('HGET', KEYS[1], ARGV[1])
if not stored then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3] .. '|' .. ARGV[2])
  return {'ok', ARGV[3]}
end

local position, suffix = split_stored(stored)
if suffix == '' then
  if string.find(stored, '^%d+$') == nil then
    return redis.error_reply('ERR checkpoint: the stored value is not a checkpoint')
  end
  redis.call('HSET', KEYS[1], ARGV[1], stored .. '|' .. ARGV[2])
  return {'ok', stored}
end

local fingerprint = string.sub(suffix, 2)
if fingerprint ~= ARGV[2] then
  return {'changed', fingerprint}
end
return {'ok', position}
