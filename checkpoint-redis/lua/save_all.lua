-- save_all: move several checkpoints of one group forward, each on its own, never back.
--
-- KEYS[1]              the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]              the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]              n, the number of entries, in decimal
-- ARGV[1+i]            the field of entry i (i = 1..n): `<partition>:<subscription>`
-- ARGV[1+n+i]          the position of entry i, a decimal string without leading zeros
-- ARGV[2n+2r], ARGV[2n+2r+1]
--                      run r: a subscription and how many consecutive entries (after those
--                      of the runs before it) are its own; the counts add up to n
--
-- The client sends at most one entry per field (it collapses repeats to the highest first),
-- sorted by subscription so that each subscription is one run, and at most 1,000 entries per
-- call by default (2,000 at most), so one call never blocks the server long. The script reads
-- every field with one HMGET and writes the ones that move with one HSET: two calls into Redis
-- instead of two per entry, plus one SISMEMBER per subscription. The fields and positions are
-- halves of ARGV so that HMGET takes them as they are (no table is built unless a
-- subscription is retired), and the positions are checked all at once. (unpack() of Redis's
-- Lua 5.1 takes at most about 8,000 values, so a call must stay below 4,000 entries.)
-- Returns the number of checkpoints that moved (or were created). Entries of a retired
-- subscription are ignored.
--
-- Runs after positions.lua (ahead, split_stored, find): same value format and exact
-- comparison as save.lua, decimal strings, never one Lua number of more than 15 digits.

local function invalid(what)
  return redis.error_reply('ERR checkpoint: ' .. what)
end

-- true when t[i..j] are all positions (is_position): a thousand are checked with a few
-- searches over their concatenation instead of a thousand searches (one anchored pattern for
-- the digits, plain searches otherwise: an unanchored pattern is tried at every byte)
local function all_positions(t, i, j)
  if not find(table.concat(t, '', i, j), '^%d*$') then
    return false
  end
  -- Digits only: every space of `joined` is a separator. None empty, no leading zero.
  local joined = ' ' .. table.concat(t, ' ', i, j) .. ' '
  if find(joined, '  ', 1, true) then
    return false
  end
  -- A leading zero: ` 0` followed by a digit (a lone `0` is followed by a space).
  local at = find(joined, ' 0', 1, true)
  while at do
    if string.byte(joined, at + 2) ~= 32 then
      return false
    end
    at = find(joined, ' 0', at + 2, true)
  end
  return true
end

local n = #ARGV > 0 and find(ARGV[1], '^[1-9]%d*$') and tonumber(ARGV[1])
if not n or #ARGV < 2 * n + 3 or #ARGV % 2 ~= 1 then
  return invalid('expected a count, fields, positions and subscription runs')
end
if not all_positions(ARGV, n + 2, 2 * n + 1) then
  return invalid('a position argument is not a decimal position')
end

-- gone[i] is true for entry i of a retired subscription; nil when no entry is.
local gone, total, checked = nil, 0, {}
for r = 2 * n + 2, #ARGV, 2 do
  local count = find(ARGV[r + 1], '^[1-9]%d*$') and tonumber(ARGV[r + 1])
  if not count then
    return invalid('a subscription run has no count')
  end
  local subscription = ARGV[r]
  if checked[subscription] == nil then
    checked[subscription] = redis.call('SISMEMBER', KEYS[2], subscription) == 1
  end
  if checked[subscription] then
    gone = gone or {}
    for i = total + 1, math.min(total + count, n) do
      gone[i] = true
    end
  end
  total = total + count
end
if total ~= n then
  return invalid('the subscription runs do not cover the entries')
end

-- index[j]: the entry of the j-th field read (nil when every entry is read).
local index, stored = nil, nil
if gone then
  index = {}
  local fields = {}
  for i = 1, n do
    if not gone[i] then
      index[#index + 1] = i
      fields[#fields + 1] = ARGV[1 + i]
    end
  end
  if #fields == 0 then
    return 0
  end
  stored = redis.call('HMGET', KEYS[1], unpack(fields))
else
  stored = redis.call('HMGET', KEYS[1], unpack(ARGV, 2, n + 1))
end

-- The position part of each stored value (a value of more than 19 characters may hold a
-- fingerprint: split), all checked at once before anything is compared or written.
local currents, suffixes = {}, {}
for j = 1, #stored do
  local value = stored[j]
  if value then
    if #value > 19 then
      currents[j], suffixes[j] = split_stored(value)
    else
      currents[j] = value
    end
  else
    currents[j] = '0'
  end
end
if not all_positions(currents, 1, #currents) then
  -- Nothing is written yet: a call with a corrupt value changes nothing.
  return invalid('a stored value is not a checkpoint')
end

local updates, k = {}, 0
for j = 1, #stored do
  local i = index and index[j] or j
  local position, current = ARGV[1 + n + i], currents[j]
  local move = not stored[j]
  if not move then
    -- ahead(position, current), inlined: by length, then as numbers when both are below
    -- 10^15 (`+ 0` turns a decimal string into a number, exact below 2^53).
    local lp, lc = #position, #current
    if lp ~= lc then
      move = lp > lc
    elseif lp <= 15 then
      move = position + 0 > current + 0
    else
      move = ahead(position, current)
    end
  end
  if move then
    updates[k + 1] = ARGV[1 + i]
    updates[k + 2] = position .. (suffixes[j] or '')
    k = k + 2
  end
end

if k > 0 then
  redis.call('HSET', KEYS[1], unpack(updates, 1, k))
end
return k / 2
