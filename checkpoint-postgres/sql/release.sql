-- $1 group, $2 subscription, $3 owner, $4 partitions (bigint[], each once).
-- Frees each named partition the owner holds live (by the server's clock, now()): no owner,
-- the epoch kept so that it is never handed out again, any handover request cleared. Returns
-- the partitions freed, sorted; the client reports the others as not held. The owner's
-- other leases and its heartbeat are untouched. The rows are locked in partition order by
-- `locked` (as every statement that waits for lease rows takes them, so none can deadlock
-- with another); the UPDATE then changes only rows this statement has locked.
WITH locked AS (
    SELECT l.partition_id
    FROM {leases} AS l
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = ANY ($4::bigint[])
        AND l.owner = $3 AND l.expires_at > now()
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
