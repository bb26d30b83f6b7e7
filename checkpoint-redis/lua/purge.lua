-- purge: remove a retired subscription's tombstone and whatever it left, so that its name can
-- be used again.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]  the subscription
--
-- Returns {'purged'} when the name was retired (its tombstone and any checkpoint left under it
-- are removed), {'live'} when it is not retired and has a checkpoint (nothing is changed), or
-- {'none'} when there is nothing under the name.
--
-- Runs after positions.lua and fields.lua (fields_of, delete_fields).

if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then
  -- retire.lua left nothing and no save could write since; this removes what an interrupted
  -- or older writer may have left.
  delete_fields(KEYS[1], fields_of(KEYS[1], ARGV[1], nil))
  return {'purged'}
end
if #fields_of(KEYS[1], ARGV[1], 1) > 0 then
  return {'live'}
end
return {'none'}
