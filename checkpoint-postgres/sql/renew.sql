-- $1 group, $2 subscription, $3 owner, $4 the lease's duration in microseconds.
-- One statement, judged by the server's clock (now(), this statement's start): when the
-- owner's heartbeat in {owners} is live, it and every live lease of the owner now expire at
-- now() + $4; an expired lease is never revived. `held` says whether the heartbeat was live
-- (otherwise the client reports NotHeld), `retired` whether the subscription has a tombstone
-- in {retired} (then nothing is written).
-- The heartbeat first, then the leases, locked in partition order by `locked` (as every
-- statement that waits for lease rows takes them, so none can deadlock with another); the
-- UPDATE then changes only rows this statement has locked. The reply is what `renewed`
-- wrote, in partition order, with any handover requested.
WITH state AS (
    SELECT
        EXISTS (
            SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
        ) AS retired,
        now() + $4::bigint * interval '1 microsecond' AS expires_at
), heartbeat AS (
    UPDATE {owners} AS o SET expires_at = state.expires_at
    FROM state
    WHERE NOT state.retired
        AND o.group_name = $1 AND o.subscription = $2 AND o.owner = $3
        AND o.expires_at > now()
    RETURNING o.expires_at
), locked AS (
    SELECT l.partition_id
    FROM {leases} AS l
    WHERE EXISTS (SELECT 1 FROM heartbeat)
        AND l.group_name = $1 AND l.subscription = $2 AND l.owner = $3
        AND l.expires_at > now()
    ORDER BY l.partition_id
    FOR NO KEY UPDATE
), renewed AS (
    UPDATE {leases} AS l SET expires_at = heartbeat.expires_at
    FROM heartbeat
    WHERE l.group_name = $1 AND l.subscription = $2
        AND l.partition_id IN (SELECT partition_id FROM locked)
        AND l.owner = $3 AND l.expires_at > now()
    RETURNING l.partition_id, l.epoch, l.handover_requested_by
)
SELECT
    state.retired,
    EXISTS (SELECT 1 FROM heartbeat) AS held,
    ARRAY(SELECT partition_id FROM renewed ORDER BY partition_id) AS partitions,
    ARRAY(SELECT epoch FROM renewed ORDER BY partition_id) AS epochs,
    ARRAY(SELECT handover_requested_by FROM renewed ORDER BY partition_id) AS handovers
FROM state
