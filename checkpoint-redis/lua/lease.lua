-- lease: the helpers every lease script shares (acquire.lua, renew.lua, release.lua,
-- leave.lua, leases.lua, request_handover.lua; purge.lua deletes the same keys). The store puts
-- this file in front of each of them at compile time (`concat!` in src/requests/lease.rs).
--
-- KEYS[1]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- KEYS[2]  the subscription's leases, a hash (`<prefix>:{<escaped group>}:leases:<subscription>`):
--          field `<partition>` (decimal), value `<epoch>\0<expiry>\0<owner>\0<requester>`,
--          the owner empty when the lease is free, the requester empty when nobody asked
-- KEYS[3]  the subscription's heartbeats, a hash (`…:owners:<subscription>`):
--          field `<owner>`, value `<expiry>`
-- KEYS[4]  the subscription's held index, a sorted set (`…:held:<subscription>`), every score
--          0, a member `<owner>\0<partition>` for each lease the owner was granted and has not
--          released: ZRANGEBYLEX reads one owner's in O(log N + its own)
--
-- Every key has the group's hash tag, so all are in the slot of the retired set. Expiries are
-- milliseconds of the server's clock (TIME, allowed in scripts since Redis 5's effect
-- replication, the only mode of Redis 7); a lease or heartbeat is live while its expiry is
-- after now. Names hold no NUL (the client validates them), so NUL separates them.

local LEASES, OWNERS, HELD = KEYS[2], KEYS[3], KEYS[4]

-- the server's clock, in milliseconds
local function now_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- a whole number as decimal digits (never Lua's exponent form)
local function decimal(n)
  return string.format('%.0f', n)
end

-- a stored lease as a table, or nil for a value these scripts never write
local function decode(value)
  local a = string.find(value, '\0', 1, true)
  local b = a and string.find(value, '\0', a + 1, true)
  local c = b and string.find(value, '\0', b + 1, true)
  if not c then
    return nil
  end
  local epoch, expiry = string.sub(value, 1, a - 1), string.sub(value, a + 1, b - 1)
  if not (string.find(epoch, '^%d+$') and string.find(expiry, '^%d+$')) then
    return nil
  end
  return {
    epoch = tonumber(epoch),
    expiry = tonumber(expiry),
    owner = string.sub(value, b + 1, c - 1),
    requester = string.sub(value, c + 1),
  }
end

local function encode(lease)
  return decimal(lease.epoch) .. '\0' .. decimal(lease.expiry) .. '\0' .. lease.owner .. '\0'
    .. lease.requester
end

local function is_live(lease, now)
  return lease.owner ~= '' and lease.expiry > now
end

local function held_member(owner, partition)
  return owner .. '\0' .. partition
end

-- The leases of `partitions` (decimal strings), decoded, a never-held one as epoch 0 and free;
-- nil and the partition when a stored value is not a lease. HMGET in chunks: Lua's unpack
-- takes about 8,000 values at most.
local function read_leases(partitions)
  local leases = {}
  for first = 1, #partitions, 1000 do
    local last = math.min(first + 999, #partitions)
    local values = redis.call('HMGET', LEASES, unpack(partitions, first, last))
    for i = first, last do
      local value = values[i - first + 1]
      if value then
        leases[i] = decode(value)
        if not leases[i] then
          return nil, partitions[i]
        end
      else
        leases[i] = {epoch = 0, expiry = 0, owner = '', requester = ''}
      end
    end
  end
  return leases
end

-- The partitions `owner` was granted and has not released, from the held index.
local function held_partitions(owner)
  local members = redis.call('ZRANGEBYLEX', HELD, '[' .. owner .. '\0', '(' .. owner .. '\1')
  local partitions = {}
  for i, member in ipairs(members) do
    partitions[i] = string.sub(member, #owner + 2)
  end
  return partitions, #members
end

-- The live leases of `owner`, read: the partitions, their leases, and nil and a partition
-- when a stored value is not a lease.
local function read_owned(owner, now)
  local partitions = held_partitions(owner)
  local leases, malformed = read_leases(partitions)
  if not leases then
    return nil, nil, malformed
  end
  local live_partitions, live_leases = {}, {}
  for i, partition in ipairs(partitions) do
    if leases[i].owner == owner and is_live(leases[i], now) then
      live_partitions[#live_partitions + 1] = partition
      live_leases[#live_leases + 1] = leases[i]
    end
  end
  return live_partitions, live_leases
end

-- Writes `lease` of `partition`.
local function write_lease(partition, lease)
  redis.call('HSET', LEASES, partition, encode(lease))
end

-- Frees `partition`, held live by its lease's owner: no owner, the epoch kept, no request.
local function free(partition, lease, now)
  redis.call('ZREM', HELD, held_member(lease.owner, partition))
  lease.owner, lease.requester, lease.expiry = '', '', now
  write_lease(partition, lease)
end

-- Appends partition, epoch and requester of each lease to `reply`.
local function append_held(reply, partitions, leases)
  for i, partition in ipairs(partitions) do
    reply[#reply + 1] = partition
    reply[#reply + 1] = decimal(leases[i].epoch)
    reply[#reply + 1] = leases[i].requester
  end
  return reply
end

-- The reply for a stored value that is not a lease or a heartbeat.
local function malformed_reply(what, name)
  return {'malformed', what, name}
end
