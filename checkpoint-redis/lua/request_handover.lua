-- request_handover: mark each named partition held live by another owner as asked for by the
-- requester, in one atomic step; free partitions and the requester's own are left as they are.
--
-- KEYS[1..4]  the retired set (unused), leases, heartbeats and held index (see lease.lua)
-- ARGV[1]     the requester
-- ARGV[2..]   the partitions, decimal, none twice
--
-- Returns {'ok', marked partition…}, or {'malformed', what, name} (nothing changed) for a
-- stored value these scripts never write.
--
-- Runs after lease.lua.

local requester = ARGV[1]
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
  local lease = leases[i]
  if is_live(lease, now) and lease.owner ~= requester then
    lease.requester = requester
    write_lease(partition, lease)
    reply[#reply + 1] = partition
  end
end
return reply
