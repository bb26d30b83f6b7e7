-- leases: the live leases and live owners of a subscription, by the server's clock; the
-- heartbeats that expired are deleted on the way (nothing reads them again: renew refuses an
-- absent heartbeat as it refuses an expired one).
--
-- KEYS[1..4]  the retired set (unused), leases, heartbeats and held index (see lease.lua)
-- ARGV        none
--
-- Returns {'ok', n, <partition, owner, epoch, milliseconds left, requester> × n,
-- <owner, milliseconds left>…}, or {'malformed', what, name} for a stored value these scripts
-- never write.
--
-- Runs after lease.lua.

local now = now_ms()
local stored = redis.call('HGETALL', LEASES)
local live = {}
for i = 1, #stored, 2 do
  local lease = decode(stored[i + 1])
  if not lease then
    return malformed_reply('lease', stored[i])
  end
  if is_live(lease, now) then
    live[#live + 1] = stored[i]
    live[#live + 1] = lease.owner
    live[#live + 1] = decimal(lease.epoch)
    live[#live + 1] = decimal(lease.expiry - now)
    live[#live + 1] = lease.requester
  end
end
local heartbeats = redis.call('HGETALL', OWNERS)
local owners, expired = {}, {}
for i = 1, #heartbeats, 2 do
  if not string.find(heartbeats[i + 1], '^%d+$') then
    return malformed_reply('heartbeat', heartbeats[i])
  end
  local expiry = tonumber(heartbeats[i + 1])
  if expiry > now then
    owners[#owners + 1] = heartbeats[i]
    owners[#owners + 1] = decimal(expiry - now)
  else
    expired[#expired + 1] = heartbeats[i]
  end
end
for first = 1, #expired, 1000 do
  redis.call('HDEL', OWNERS, unpack(expired, first, math.min(first + 999, #expired)))
end

local reply = {'ok', tostring(#live / 5)}
for _, part in ipairs(live) do
  reply[#reply + 1] = part
end
for _, part in ipairs(owners) do
  reply[#reply + 1] = part
end
return reply
