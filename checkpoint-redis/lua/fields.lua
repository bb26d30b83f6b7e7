-- fields: the helper the operator's scripts (retire.lua, start_at.lua, purge.lua) share, to find
-- the fields of one subscription in a group's hash. The store puts it after positions.lua
-- (subscription_of) and before the operation's own file (`concat!` in src/requests/admin.rs).
--
-- KEYS, ARGV  none of its own: those of the script it is put in front of.
--
-- The hash holds one field per (subscription, partition), `<partition>:<subscription>`, with
-- the partition first: a subscription's fields are found by visiting the whole hash with
-- HSCAN (MATCH `*:<subscription, glob-escaped>` filters on the server, the exact comparison is
-- done here, since `*:b` also matches a subscription `a:b`). That is O(size of the group) in
-- one script: the server serves nobody else meanwhile. Only operators call these scripts.

-- `text` with the glob characters of MATCH escaped
local function glob_escaped(text)
  return (string.gsub(text, '([%*%?%[%]\\])', '\\%1'))
end

-- the fields of hash `key` that belong to `subscription`, each once; at most `limit` of them
-- (nil: all)
local function fields_of(key, subscription, limit)
  local pattern = '*:' .. glob_escaped(subscription)
  local found, seen = {}, {}
  local cursor = '0'
  repeat
    local reply = redis.call('HSCAN', key, cursor, 'MATCH', pattern, 'COUNT', 1000)
    cursor = reply[1]
    local items = reply[2]
    for i = 1, #items, 2 do
      local field = items[i]
      -- HSCAN may return a field twice while the hash is rehashed
      if not seen[field] and subscription_of(field) == subscription then
        seen[field] = true
        found[#found + 1] = field
        if limit and #found >= limit then
          return found
        end
      end
    end
  until cursor == '0'
  return found
end

-- deletes the given fields of hash `key`, at most 1,000 per HDEL (unpack's limit is about
-- 8,000 values); returns how many were deleted
local function delete_fields(key, fields)
  local deleted = 0
  for first = 1, #fields, 1000 do
    local last = math.min(first + 999, #fields)
    deleted = deleted + redis.call('HDEL', key, unpack(fields, first, last))
  end
  return deleted
end
