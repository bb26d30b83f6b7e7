-- $1 group, $2 subscription, $3 requester, $4 partitions (bigint[], each once).
-- Marks each named partition that another owner holds live (its row names an owner whose
-- heartbeat has the row's generation and has not expired by the server's clock, now()) as
-- asked for by the requester, replacing an earlier request. Free partitions, and those the
-- requester holds itself, are left as they are. The rows are locked in partition order by
-- `locked` (as every statement that waits for lease rows takes them, so none can deadlock
-- with another; heartbeats are read, not locked); the UPDATE then changes only rows this
-- statement has locked, found by their `ctid` (what `locked` returns is each row's newest
-- version, which nobody else can change until this statement ends).
WITH locked AS (
    SELECT l.ctid
    FROM {leases} AS l
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = ANY ($4::bigint[])
        AND l.owner <> $3
        AND l.owner_generation = (
            SELECT o.generation FROM {owners} AS o
            WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = l.owner
                AND o.expires_at > now()
        )
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
)
UPDATE {leases} AS l
SET handover_requested_by = $3
WHERE l.ctid = ANY (ARRAY(SELECT ctid FROM locked))
