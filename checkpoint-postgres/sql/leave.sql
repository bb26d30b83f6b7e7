-- $1 group, $2 subscription, $3 owner.
-- Ends the owner's heartbeat (its row of {owners} deleted, first: `locked` reads it) and
-- frees every lease it holds live (by the server's clock, now()), as release.sql does, the
-- rows locked in partition order. Returns the partitions freed, sorted.
WITH heartbeat AS (
    DELETE FROM {owners} AS o
    WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = $3
    RETURNING 1
), locked AS (
    SELECT l.partition_id
    FROM {leases} AS l
    WHERE (SELECT count(*) FROM heartbeat) >= 0
        AND l.group_name = $1 AND l.subscription = $2 AND l.owner = $3
        AND l.expires_at > now()
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
), released AS (
    UPDATE {leases} AS l
    SET owner = NULL, expires_at = now(), handover_requested_by = NULL
    WHERE l.group_name = $1 AND l.subscription = $2
        AND l.partition_id IN (SELECT partition_id FROM locked)
        AND l.owner = $3 AND l.expires_at > now()
    RETURNING l.partition_id
)
SELECT ARRAY(SELECT partition_id FROM released ORDER BY partition_id) AS partitions
