-- acquire: renew every live lease of an owner and its heartbeat, and grant it the partitions
-- asked for that are free, expired or its own, in one atomic step.
--
-- KEYS[1..4]  the retired set, leases, heartbeats and held index (see lease.lua)
-- ARGV[1]     the subscription
-- ARGV[2]     the owner
-- ARGV[3]     the duration, whole milliseconds
-- ARGV[4..]   the partitions asked for, decimal, none twice
--
-- Returns {'retired'} (nothing changed) when the subscription is retired, {'malformed', what,
-- name} (nothing changed) when a stored value is not one these scripts write, else
-- {'ok', n, <partition, epoch, requester> × n, refused partition…}: the n leases the owner holds
-- now (requester '' for none) and the partitions another owner holds live.
--
-- Runs after lease.lua.

if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  return {'retired'}
end
local owner = ARGV[2]
local now = now_ms()
local expiry = now + tonumber(ARGV[3])
local asked = {}
for i = 4, #ARGV do
  asked[#asked + 1] = ARGV[i]
end
-- Every read first, so that a malformed value changes nothing.
local asked_leases, malformed = read_leases(asked)
if not asked_leases then
  return malformed_reply('lease', malformed)
end
local partitions, leases, owned_malformed = read_owned(owner, now)
if not partitions then
  return malformed_reply('lease', owned_malformed)
end

redis.call('HSET', OWNERS, owner, decimal(expiry))
for i, partition in ipairs(partitions) do
  leases[i].expiry = expiry
  write_lease(partition, leases[i])
end
local refused = {}
for i, partition in ipairs(asked) do
  local lease = asked_leases[i]
  if is_live(lease, now) then
    if lease.owner ~= owner then
      refused[#refused + 1] = partition
    end
  else
    if lease.owner ~= '' then
      redis.call('ZREM', HELD, held_member(lease.owner, partition))
    end
    lease.epoch, lease.expiry, lease.owner, lease.requester = lease.epoch + 1, expiry, owner, ''
    write_lease(partition, lease)
    redis.call('ZADD', HELD, 0, held_member(owner, partition))
    partitions[#partitions + 1] = partition
    leases[#leases + 1] = lease
  end
end

local reply = append_held({'ok', tostring(#partitions)}, partitions, leases)
for _, partition in ipairs(refused) do
  reply[#reply + 1] = partition
end
return reply
