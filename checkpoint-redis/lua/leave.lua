-- leave: free every lease an owner holds live and delete its heartbeat, in one atomic step.
--
-- KEYS[1..4]  the retired set (unused), leases, heartbeats and held index (see lease.lua)
-- ARGV[1]     the owner
--
-- Returns {'ok', released partition…}, or {'malformed', what, name} (nothing changed) for a
-- stored value these scripts never write.
--
-- Runs after lease.lua.

local owner = ARGV[1]
local now = now_ms()
local partitions, leases, malformed = read_owned(owner, now)
if not partitions then
  return malformed_reply('lease', malformed)
end
redis.call('HDEL', OWNERS, owner)
local reply = {'ok'}
for i, partition in ipairs(partitions) do
  free(partition, leases[i], now)
  reply[#reply + 1] = partition
end
-- What is left of the owner in the index: leases that expired while it held them.
redis.call('ZREMRANGEBYLEX', HELD, '[' .. owner .. '\0', '(' .. owner .. '\1')
return reply
