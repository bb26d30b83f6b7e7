-- $1 group, $2 subscription, $3 owner, $4 partitions (bigint[], each once).
-- Frees each named partition the owner holds live (its row names the owner and the
-- generation of the owner's heartbeat, which has not expired by the server's clock, now()):
-- no generation (the owner is kept, so that the row is not moved in the index by owner and
-- the update stays in place), the epoch kept so that it is never handed out again, any
-- handover request cleared. Returns the partitions freed, sorted; the client reports the others as not held.
-- The owner's other leases and its heartbeat are untouched (read, not locked).
-- The rows are locked in partition order by `locked` (as every statement that waits for lease
-- rows takes them, so none can deadlock with another), each judged again on its newest
-- version; the UPDATE then changes only rows this statement has locked, found by their
-- `ctid` (`locked` returns each row's newest version, which nobody else can change until this
-- statement ends).
WITH heartbeat AS (
    SELECT o.generation
    FROM {owners} AS o
    WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = $3 AND o.expires_at > now()
), locked AS (
    SELECT l.ctid
    FROM {leases} AS l
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = ANY ($4::bigint[])
        AND l.owner = $3 AND l.owner_generation = (SELECT generation FROM heartbeat)
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
), released AS (
    UPDATE {leases} AS l
    SET owner_generation = NULL, handover_requested_by = NULL
    WHERE l.ctid = ANY (ARRAY(SELECT ctid FROM locked))
    RETURNING l.partition_id
)
SELECT ARRAY(SELECT partition_id FROM released ORDER BY partition_id) AS partitions
