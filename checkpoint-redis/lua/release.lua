-- release: free the partitions an owner holds live, in one atomic step; the others are left
-- as they are.
--
-- KEYS[1..4]  the retired set (unused), leases, heartbeats and held index (see lease.lua)
-- ARGV[1]     the owner
-- ARGV[2..]   the partitions, decimal, none twice
--
-- Returns {'ok', released partition…}, or {'malformed', what, name} (nothing changed) for a
-- stored value these scripts never write.
--
-- Runs after lease.lua.

local owner = ARGV[1]
local now = now_ms()
local partitions = {}
for i = 2, #ARGV do
  partitions[#partitions + 1] = ARGV[i]
end
local leases, malformed = read_leases(partitions)
if not leases then
  return malformed_reply('lease', malformed)
end
local reply = {'ok'}
for i, partition in ipairs(partitions) do
  if leases[i].owner == owner and is_live(leases[i], now) then
    free(partition, leases[i], now)
    reply[#reply + 1] = partition
  end
end
return reply
