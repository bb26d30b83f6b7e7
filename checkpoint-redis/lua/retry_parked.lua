-- retry_parked: ask for a parked entry to be retried, in one atomic step that sets its retry
-- flag only if the entry is parked.
--
-- KEYS[1]  the group's parked hash (`<prefix>:{<escaped group>}:parked`)
-- ARGV[1]  the entry's field (`<partition>:<position>:<subscription>`)
--
-- Returns {'parked'} when the entry is parked (the first byte of its value, the retry flag,
-- is `1` afterwards), {'none'} when it is not, or {'malformed', value} when its value is not
-- one this store writes; only the first writes anything.
--
-- Runs on its own (no shared helpers).

local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then
  return {'none'}
end
local flag = string.sub(value, 1, 2)
if flag ~= '0|' and flag ~= '1|' then
  return {'malformed', value}
end
if flag == '0|' then
  redis.call('HSET', KEYS[1], ARGV[1], '1' .. string.sub(value, 2))
end
return {'parked'}
