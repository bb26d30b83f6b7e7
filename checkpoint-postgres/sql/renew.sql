-- $1 group, $2 subscription, $3 owner, $4 the lease's duration in microseconds.
-- One statement, judged by the server's clock (now(), this statement's start), that writes
-- one row whatever the number of leases: expiry lives only in the heartbeat (a lease is held
-- by its `owner` while that owner's heartbeat has the lease's `owner_generation` and has not
-- expired), so `heartbeat` extending the owner's heartbeat to now() + $4, when it is live,
-- renews every lease the owner holds; an expired heartbeat is never revived. `held` says
-- whether the heartbeat was live (otherwise the client reports NotHeld), `retired` whether
-- the subscription has a tombstone in {retired} (then nothing is written).
-- The reply is the leases of the heartbeat's generation, read through the index by owner.
-- None of them can have been given away to another owner since the statement's snapshot:
-- taking a lease from a holder of the same generation requires its heartbeat expired, and
-- the taker ends it (sql/acquire.sql) under its row lock, which this UPDATE waits for and then
-- judges again: expired, so nothing is renewed.
WITH state AS (
    SELECT EXISTS (
        SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
    ) AS retired
), heartbeat AS (
    UPDATE {owners} AS o SET expires_at = now() + $4::bigint * interval '1 microsecond'
    FROM state
    WHERE NOT state.retired
        AND o.group_name = $1 AND o.subscription = $2 AND o.owner = $3
        AND o.expires_at > now()
    RETURNING o.generation
), renewed AS (
    SELECT l.partition_id, l.epoch, l.handover_requested_by
    FROM {leases} AS l, heartbeat AS hb
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.owner = $3
        AND l.owner_generation = hb.generation
)
SELECT
    state.retired,
    EXISTS (SELECT 1 FROM heartbeat) AS held,
    ARRAY(SELECT partition_id FROM renewed ORDER BY partition_id) AS partitions,
    ARRAY(SELECT epoch FROM renewed ORDER BY partition_id) AS epochs,
    ARRAY(SELECT handover_requested_by FROM renewed ORDER BY partition_id) AS handovers
FROM state
