-- start_at: create a subscription at chosen positions, all of them or none.
--
-- KEYS[1]      the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]      the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]      the subscription
-- ARGV[2i]     the field of partition i: `<partition>:<subscription>` (each partition once;
--              checked by the client)
-- ARGV[2i+1]   its position, a decimal string without leading zeros
--
-- Returns {'retired'} when the name is retired, {'exists'} when it has any checkpoint (nothing
-- is written either way), else {'ok'} after writing every field. Everything is checked before
-- the first write, so the script writes all of them or none.
--
-- Runs after positions.lua (is_position, is_retired) and fields.lua (fields_of).

if #ARGV < 3 or #ARGV % 2 ~= 1 then
  return redis.error_reply('ERR checkpoint: expected a subscription, then field and position pairs')
end
for i = 2, #ARGV, 2 do
  if not is_position(ARGV[i + 1]) then
    return redis.error_reply('ERR checkpoint: a position argument is not a decimal position')
  end
  if subscription_of(ARGV[i]) ~= ARGV[1] then
    return redis.error_reply('ERR checkpoint: a field is not one of the subscription')
  end
end

if is_retired(KEYS[2], ARGV[1]) then
  return {'retired'}
end
if #fields_of(KEYS[1], ARGV[1], 1) > 0 then
  return {'exists'}
end

-- At most 1,000 fields per HSET (unpack's limit is about 8,000 values).
for first = 2, #ARGV, 2000 do
  local last = math.min(first + 1999, #ARGV)
  redis.call('HSET', KEYS[1], unpack(ARGV, first, last))
end
return {'ok'}
