-- $1 group, $2 subscription, $3 owner.
-- Ends the owner's heartbeat, when it is live by the server's clock (now()): its row of
-- {owners} is kept, with expires_at = -infinity, so that a later acquire starts the next
-- generation (a deleted row would start again at 1, and revive leases of that generation).
-- Every lease of its generation is then free: no lease row is written. Returns them, sorted,
-- read through the index by owner.
WITH heartbeat AS (
    UPDATE {owners} AS o SET expires_at = '-infinity'
    WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = $3 AND o.expires_at > now()
    RETURNING o.generation
)
SELECT ARRAY(
    SELECT l.partition_id
    FROM {leases} AS l, heartbeat AS hb
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.owner = $3
        AND l.owner_generation = hb.generation
    ORDER BY l.partition_id
) AS partitions
