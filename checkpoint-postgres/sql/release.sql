-- $1 group, $2 subscription, $3 owner, $4 partitions (bigint[], each once).
-- Frees each named partition the owner holds live (its row names the owner and the
-- generation of the owner's heartbeat, which has not expired by the server's clock, now()):
-- no generation (the owner is kept, so that the row is not moved in the index by owner and
-- the update stays in place), the epoch kept so that it is never handed out again, any
-- handover request cleared. Returns the partitions freed, sorted; the client reports the
-- others as not held. The owner's other leases and its heartbeat are untouched (read, not
-- locked).
-- `locked` locks the rows in partition order (as every statement that waits for lease rows
-- takes them, so none can deadlock with another), each judged again on its newest version,
-- and returns their partitions; the ARRAY(...) around it is computed once, before the
-- UPDATE reads a row, so every lock is taken, in order, first. The UPDATE then finds the
-- rows by key and repeats the conditions: it reads with the statement's snapshot, and a row
-- changed since the snapshot (a handover request marked it) is judged again on its newest
-- version, the one `locked` holds, by READ COMMITTED's recheck. (Not by the `ctid` `locked`
-- saw: that is the newest version's, which the snapshot does not see, so such a row would be
-- left held and reported not held.)
WITH heartbeat AS (
    SELECT o.generation
    FROM {owners} AS o
    WHERE o.group_name = $1 AND o.subscription = $2 AND o.owner = $3 AND o.expires_at > now()
), locked AS (
    SELECT l.partition_id
    FROM {leases} AS l
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = ANY ($4::bigint[])
        AND l.owner = $3 AND l.owner_generation = (SELECT generation FROM heartbeat)
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
), released AS (
    UPDATE {leases} AS l
    SET owner_generation = NULL, handover_requested_by = NULL
    WHERE l.group_name = $1 AND l.subscription = $2
        AND l.partition_id = ANY (ARRAY(SELECT partition_id FROM locked))
        AND l.owner = $3 AND l.owner_generation = (SELECT generation FROM heartbeat)
    RETURNING l.partition_id
)
SELECT ARRAY(SELECT partition_id FROM released ORDER BY partition_id) AS partitions
