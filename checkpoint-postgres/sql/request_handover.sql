-- $1 group, $2 subscription, $3 requester, $4 partitions (bigint[], each once).
-- Marks each named partition that another owner holds live (its row names an owner whose
-- heartbeat has the row's generation and has not expired by the server's clock, now()) as
-- asked for by the requester, replacing an earlier request. Free partitions, and those the
-- requester holds itself, are left as they are.
-- `locked` locks the rows in partition order (as every statement that waits for lease rows
-- takes them, so none can deadlock with another; heartbeats are read, not locked), each
-- judged again on its newest version, and returns their partitions; the ARRAY(...) around it
-- is computed once, before the UPDATE reads a row, so every lock is taken, in order, first.
-- The UPDATE then finds the rows by key and repeats the conditions: it reads with the
-- statement's snapshot, and a row changed since the snapshot (released, granted again, or
-- marked by another requester) is judged again on its newest version, the one `locked`
-- holds, by READ COMMITTED's recheck, so a lease released meanwhile stays free and unmarked.
-- (Not by the `ctid` `locked` saw: that is the newest version's, which the snapshot does not
-- see, so such a row would be left unmarked.)
WITH locked AS (
    SELECT l.partition_id
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
WHERE l.group_name = $1 AND l.subscription = $2
    AND l.partition_id = ANY (ARRAY(SELECT partition_id FROM locked))
    AND l.owner <> $3
    AND l.owner_generation = (
        SELECT o.generation FROM {owners} AS o
        WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = l.owner
            AND o.expires_at > now()
    )
