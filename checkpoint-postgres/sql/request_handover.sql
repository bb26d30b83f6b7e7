-- $1 group, $2 subscription, $3 requester, $4 partitions (bigint[], each once).
-- Marks each named partition that another owner holds live (by the server's clock, now())
-- as asked for by the requester, replacing an earlier request. Free partitions, and those the
-- requester holds itself, are left as they are. The rows are locked in partition order by
-- `locked` (as every statement that waits for lease rows takes them, so none can deadlock
-- with another); the UPDATE then changes only rows this statement has locked.
WITH locked AS (
    SELECT l.partition_id
    FROM {leases} AS l
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = ANY ($4::bigint[])
        AND l.owner <> $3 AND l.expires_at > now()
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
)
UPDATE {leases} AS l
SET handover_requested_by = $3
WHERE l.group_name = $1 AND l.subscription = $2
    AND l.partition_id IN (SELECT partition_id FROM locked)
    AND l.owner <> $3 AND l.expires_at > now()
