-- renew: extend an owner's heartbeat and every lease it holds live, in one atomic step.
--
-- KEYS[1..4]  the retired set, leases, heartbeats and held index (see lease.lua)
-- ARGV[1]     the subscription
-- ARGV[2]     the owner
-- ARGV[3]     the duration, whole milliseconds
--
-- Returns {'retired'} when the subscription is retired, {'not_held'} when the owner's
-- heartbeat has expired or never existed, {'malformed', what, name} for a stored value these
-- scripts never write (nothing changed in these three cases), else
-- {'ok', <partition, epoch, requester>…}: every lease the owner holds, now renewed.
--
-- Runs after lease.lua.

if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return {'retired'}
end
local owner = ARGV[2]
local now = now_ms()
local heartbeat = redis.call('HGET', OWNERS, owner)
if not heartbeat then
  return {'not_held'}
end
if not string.find(heartbeat, '^%d+$') then
  return malformed_reply('heartbeat', owner)
end
if tonumber(heartbeat) <= now then
  return {'not_held'}
end
local partitions, leases, malformed = read_owned(owner, now)
if not partitions then
  return malformed_reply('lease', malformed)
end

local expiry = now + tonumber(ARGV[3])
redis.call('HSET', OWNERS, owner, decimal(expiry))
for i, partition in ipairs(partitions) do
  leases[i].expiry = expiry
  write_lease(partition, leases[i])
end
return append_held({'ok'}, partitions, leases)
