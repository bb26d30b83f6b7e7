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
-- subscription is retired). Each position and each stored position is checked where it is
-- compared, by the number it reads as, and all of them at once for the letters a number may
-- hold (see moves), instead of by patterns walking every character in Lua's matcher: those
-- took about a quarter of a call of 1,000 on the server, the number check about a tenth.
-- Anything wrong is then named by the exact checks (all_positions), on that path only.
-- (unpack() of Redis's Lua 5.1 takes at most about 8,000 values, so a call must stay below
-- 4,000 entries.)
-- Returns the number of checkpoints that moved (or were created). Entries of a retired
-- subscription are ignored.
--
-- Runs after positions.lua (ahead, split_stored, find): same value format and exact
-- comparison as save.lua, decimal strings, never one Lua number of more than 15 digits, and
-- the same refusals as before the quick check (tests/integration/layout.rs has the values).

local POSITION = 'a position argument is not a decimal position'

local function invalid(what)
  return redis.error_reply('ERR checkpoint: ' .. what)
end

-- true when t[i..j] are all positions (is_position): a thousand are checked with a few
-- searches over their concatenation instead of a thousand searches (one anchored pattern for
-- the digits, plain searches otherwise: an unanchored pattern is tried at every byte). The
-- exact check, to name what is wrong once the quick one (moves) found something.
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

-- LOW[L] <= x < HIGH[L] holds for the number x of every decimal position of L digits
-- (L = 1..15): 10^(L-1) (0 for one digit) and 10^L, exact as Lua numbers, as is every x.
-- It holds for no other string of L characters that `s + 0` reads (strtod, then trailing
-- spaces) unless the string has an exponent (`e`, `E`) or is hexadecimal (`x`, `X`),
-- which no_letters rules out: a sign, a space, a point, a leading zero or a NUL each take
-- the place of a digit, so x < 10^(L-1); `inf` is too large and `nan` compares false.
local LOW, HIGH = {0}, {10}
for L = 2, 15 do
  LOW[L], HIGH[L] = HIGH[L - 1], HIGH[L - 1] * 10
end

-- true when none of t[i..j] holds a letter of an exponent or of a hexadecimal number: four
-- plain searches over their concatenation
local function no_letters(t, i, j)
  local joined = table.concat(t, '', i or 1, j or #t)
  return not (find(joined, 'e', 1, true) or find(joined, 'E', 1, true)
    or find(joined, 'x', 1, true) or find(joined, 'X', 1, true))
end

-- the position part of each stored value read as moves reads it, '0' for a missing one
-- (for all_positions)
local function stored_positions(stored)
  local currents = {}
  for j = 1, #stored do
    local value = stored[j] or '0'
    currents[j] = #value > 19 and split_stored(value) or value
  end
  return currents
end

local n = #ARGV > 0 and find(ARGV[1], '^[1-9]%d*$') and tonumber(ARGV[1])
if not n or #ARGV < 2 * n + 3 or #ARGV % 2 ~= 1 then
  return invalid('expected a count, fields, positions and subscription runs')
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
  -- The positions of the entries left out are checked here, the others where they are
  -- compared (below).
  if not all_positions(ARGV, n + 2, 2 * n + 1) then
    return invalid(POSITION)
  end
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

-- The HSET's arguments (field, new value, ...) and their count, or nil when a position or
-- a stored position is not one. Each is checked as it is compared, by the number it reads as
-- (`s + 0`, which the comparison needs anyway, instead of a pattern over its characters):
-- within LOW[L] <= x < HIGH[L] for its length L <= 15 (see LOW), by pattern when longer.
-- `s + 0` raises an error for a string that is no number at all: pcall below. The stored
-- positions read are returned too, for the check of the letters (see no_letters).
local function moves()
  -- ARGV is a global: a local for the loop spares a lookup in the globals per use.
  local argv, updates, k, currents, c = ARGV, {}, 0, {}, 0
  for j = 1, #stored do
    local i = index and index[j] or j
    local position, value = argv[1 + n + i], stored[j]
    local lp = #position
    local p = lp <= 15 and position + 0
    if p then
      if not (LOW[lp] <= p and p < HIGH[lp]) then
        return nil
      end
    elseif not find(position, '^[1-9]%d*$') then
      return nil
    end
    local move, suffix = true, ''
    if value then
      local current = value
      -- A value of more than 19 characters may hold a fingerprint: split.
      if #value > 19 then
        current, suffix = split_stored(value)
      end
      c = c + 1
      currents[c] = current
      local lc = #current
      local x = lc <= 15 and current + 0
      if x then
        if not (LOW[lc] <= x and x < HIGH[lc]) then
          return nil
        end
      elseif not find(current, '^[1-9]%d*$') then
        return nil
      end
      -- ahead(position, current), inlined: by length, then as the numbers read.
      if lp ~= lc then
        move = lp > lc
      elseif p then
        move = p > x
      else
        move = ahead(position, current)
      end
    end
    if move then
      updates[k + 1] = argv[1 + i]
      updates[k + 2] = position .. suffix
      k = k + 2
    end
  end
  return updates, k, currents
end

local read, updates, k, currents = pcall(moves)
-- Nothing is written yet: a call with a wrong position or a corrupt value changes nothing.
-- Which of the two it is, the exact checks say (the slow way, only on this path).
if not (read and updates and no_letters(ARGV, n + 2, 2 * n + 1) and no_letters(currents)) then
  if not all_positions(ARGV, n + 2, 2 * n + 1) then
    return invalid(POSITION)
  end
  if read then
    return invalid('a stored value is not a checkpoint')
  end
  -- Every position is one: the error came from the stored values, or from elsewhere.
  if not all_positions(stored_positions(stored), 1, #stored) then
    return invalid('a stored value is not a checkpoint')
  end
  error(updates)
end

if k > 0 then
  redis.call('HSET', KEYS[1], unpack(updates, 1, k))
end
return k / 2
