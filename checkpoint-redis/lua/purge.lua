-- purge: remove a retired subscription's tombstone and whatever it left, so that its name can
-- be used again.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- KEYS[3]  the subscription's leases (`<prefix>:{<escaped group>}:leases:<subscription>`)
-- KEYS[4]  its heartbeats (`…:owners:<subscription>`)
-- KEYS[5]  its held index (`…:held:<subscription>`)
-- ARGV[1]  the subscription
--
-- Returns {'purged'} when the name was retired (its tombstone, any checkpoint left under it,
-- and its leases and heartbeats, so that a new subscription of the name starts at epoch 1, are
-- removed), {'live'} when it is not retired and has a checkpoint (nothing is changed), or
-- {'none'} when there is nothing under the name.
--
-- Runs after positions.lua and fields.lua (fields_of, delete_fields).

-- deletes every field of hash `key`, so the hash itself (without DEL, which the store's ACL
-- user is not given: it would let it delete a group's whole hash)
local function clear_hash(key)
  local fields, seen = {}, {}
  local cursor = '0'
  repeat
    local reply = redis.call('HSCAN', key, cursor, 'COUNT', 1000)
    cursor = reply[1]
    for i = 1, #reply[2], 2 do
      local field = reply[2][i]
      if not seen[field] then
        seen[field] = true
        fields[#fields + 1] = field
      end
    end
  until cursor == '0'
  delete_fields(key, fields)
end

if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then
  -- retire.lua left nothing and no save could write since; this removes what an interrupted
  -- or older writer may have left.
  delete_fields(KEYS[1], fields_of(KEYS[1], ARGV[1], nil))
  clear_hash(KEYS[3])
  clear_hash(KEYS[4])
  redis.call('ZREMRANGEBYLEX', KEYS[5], '-', '+')
  return {'purged'}
end
if #fields_of(KEYS[1], ARGV[1], 1) > 0 then
  return {'live'}
end
return {'none'}
