-- positions: the helpers every script shares, to read a stored checkpoint value and compare
-- positions. The store puts this file in front of each script at compile time (`concat!` in
-- src/requests.rs), so the script the server runs is this file followed by the operation's own
-- (save.lua, save_all.lua, claim.lua, advance.lua, and the operator's retire.lua, start_at.lua
-- and purge.lua after fields.lua); the helpers are written once.
--
-- KEYS, ARGV  none of its own: those of the script it is put in front of.
--
-- A retired subscription's name is a member of the group's retired set
-- (`<prefix>:{<escaped group>}:retired`, the same cluster slot as the group's hash): every
-- script that can create or move a checkpoint checks it first (is_retired), in the same atomic
-- step, so a retired name never gets a checkpoint again until it is purged.
--
-- A stored value is `<position>` or, for an exclusive checkpoint, `<position>|<fingerprint>`.
-- Positions are decimal strings without leading zeros, compared exactly: by length first, then,
-- for equal lengths, as numbers of at most 15 digits each (below 2^53, where a Lua number, a
-- double, is exact), never as one Lua number of more digits, and never with Lua's string `<`,
-- which goes through the server's locale (strcoll: Redis sets LC_COLLATE from the
-- environment at start-up).

local find, sub = string.find, string.sub

-- true when s is a decimal position as the client sends it: digits only, no leading zero
local function is_position(s)
  return s == '0' or find(s, '^[1-9]%d*$') ~= nil
end

-- true when decimal string a is a higher number than b (both without leading zeros)
local function ahead(a, b)
  local n = #a
  if n ~= #b then
    return n > #b
  end
  if a == b then
    return false
  end
  -- `+ 0` turns a decimal string into a Lua number (cheaper than tonumber, a function call).
  if n <= 15 then
    return a + 0 > b + 0
  end
  -- Equal lengths above 15 digits: the first differing block of 15 digits decides, each
  -- block a number below 10^15 < 2^53, so exact.
  for i = 1, n, 15 do
    local x, y = sub(a, i, i + 14) + 0, sub(b, i, i + 14) + 0
    if x ~= y then
      return x > y
    end
  end
  return false
end

-- the position part of a stored value, and the rest (`|<fingerprint>`, or '' for a value
-- saved only monotonically), which a write keeps as it is
local function split_stored(value)
  local bar = find(value, '|', 1, true)
  if bar then
    return sub(value, 1, bar - 1), sub(value, bar)
  end
  return value, ''
end


-- the subscription of a field `<partition>:<subscription>` (the partition holds no `:`, so the
-- first `:` ends it), or nil for a field no store writes
local function subscription_of(field)
  local colon = find(field, ':', 1, true)
  if colon then
    return sub(field, colon + 1)
  end
  return nil
end

-- true when `subscription` is in the retired set `key` (a missing set holds nothing)
local function is_retired(key, subscription)
  return subscription ~= nil and redis.call('SISMEMBER', key, subscription) == 1
end
