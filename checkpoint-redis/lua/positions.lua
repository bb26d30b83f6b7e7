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
-- Positions are decimal strings and are compared as strings (length first, then byte by byte),
-- never as Lua numbers: those are doubles and lose exactness above 2^53.

-- true when s is a decimal position as the client sends it: digits only, no leading zero
local function is_position(s)
  return string.find(s, '^%d+$') ~= nil and (#s == 1 or string.byte(s, 1) ~= 48)
end

-- true when decimal string a is a higher number than b (both without leading zeros)
local function ahead(a, b)
  if #a ~= #b then
    return #a > #b
  end
  if a == b then
    return false
  end
  -- Equal lengths: the first differing digit decides. Bytes, not `a > b`, which would go
  -- through the server's locale (strcoll).
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

-- the position part of a stored value, and the rest (`|<fingerprint>`, or '' for a value
-- saved only monotonically), which a write keeps as it is
local function split_stored(value)
  local bar = string.find(value, '|', 1, true)
  if bar then
    return string.sub(value, 1, bar - 1), string.sub(value, bar)
  end
  return value, ''
end


-- the subscription of a field `<partition>:<subscription>` (the partition holds no `:`, so the
-- first `:` ends it), or nil for a field no store writes
local function subscription_of(field)
  local colon = string.find(field, ':', 1, true)
  if colon then
    return string.sub(field, colon + 1)
  end
  return nil
end

-- true when `subscription` is in the retired set `key` (a missing set holds nothing)
local function is_retired(key, subscription)
  return subscription ~= nil and redis.call('SISMEMBER', key, subscription) == 1
end
