-- retire: tombstone a subscription and delete its checkpoints, in one atomic step.
--
-- KEYS[1]  the group's hash (`<prefix>:{<escaped group>}`)
-- KEYS[2]  the group's retired set (`<prefix>:{<escaped group>}:retired`)
-- ARGV[1]  the subscription
--
-- Returns the number of checkpoints deleted. The name is added to the retired set first: every
-- later save.lua, save_all.lua and claim.lua call under it checks that set in its own atomic
-- step, so nothing under the name is written again, and the checkpoints that are there now
-- (every partition, also those saved a moment ago) are deleted here. Retiring a name that is
-- retired already, or that has no checkpoint, is allowed: it leaves it retired.
--
-- Runs after positions.lua and fields.lua (fields_of, delete_fields).

redis.call('SADD', KEYS[2], ARGV[1])
return delete_fields(KEYS[1], fields_of(KEYS[1], ARGV[1], nil))
