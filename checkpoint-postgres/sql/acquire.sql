-- $1 group, $2 subscription, $3 owner, $4 partitions (bigint[], each once; may be empty),
-- $5 the lease's duration in microseconds.
-- One statement, judged by the server's clock: now() (this statement's start) decides what is
-- live, and every lease the owner holds after it expires at now() + $5, its heartbeat too.
-- - `heartbeat` starts or extends the owner's heartbeat in {owners}, first (`written` reads
--   it); a retired subscription (a tombstone in {retired}) writes nothing, and `retired`
--   says so;
-- - `wanted`: the partitions asked for, but those another owner holds live in the
--   statement's snapshot (never even locked, so this statement does not wait for them), and
--   the owner's live leases it does not name again (to renew them);
-- - `written` takes them in partition order, one upsert: a partition asked for that is free
--   (no row, no owner, or expired) gets the next epoch and loses any handover request; a
--   lease the owner holds live keeps its epoch and request, and now expires with the
--   heartbeat. A row inserted or changed concurrently is locked by ON CONFLICT and the WHERE
--   judged on its newest version, so of concurrent acquirers of one partition exactly one
--   gets it. Every statement that waits for lease rows takes them in partition order, so
--   none can deadlock with another. A lease to renew is proposed with no owner: should its
--   row be gone (a concurrent purge), what is inserted is a free lease, not a grant.
-- The reply is what `written` wrote (its RETURNING), in partition order.
WITH state AS (
    SELECT
        EXISTS (
            SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
        ) AS retired,
        now() + $5::bigint * interval '1 microsecond' AS expires_at
), heartbeat AS (
    INSERT INTO {owners} AS o (group_name, subscription, owner, expires_at)
    SELECT $1, $2, $3, state.expires_at FROM state WHERE NOT state.retired
    ON CONFLICT (group_name, subscription, owner) DO UPDATE
        SET expires_at = EXCLUDED.expires_at
    RETURNING o.expires_at
), wanted AS (
    SELECT p.partition_id, true AS asked
    FROM unnest($4::bigint[]) AS p (partition_id)
    WHERE NOT EXISTS (
        SELECT 1 FROM {leases} AS other
        WHERE other.group_name = $1 AND other.subscription = $2
            AND other.partition_id = p.partition_id
            AND other.owner <> $3 AND other.expires_at > now()
    )
    UNION ALL
    SELECT held.partition_id, false
    FROM {leases} AS held
    WHERE held.group_name = $1 AND held.subscription = $2
        AND held.owner = $3 AND held.expires_at > now()
        AND held.partition_id <> ALL ($4::bigint[])
), written AS (
    INSERT INTO {leases} AS l (group_name, subscription, partition_id, owner, epoch, expires_at)
    SELECT $1, $2, w.partition_id, CASE WHEN w.asked THEN $3 END, 1, heartbeat.expires_at
    FROM wanted AS w, heartbeat
    ORDER BY w.partition_id
    ON CONFLICT (group_name, subscription, partition_id) DO UPDATE SET
        owner = $3,
        epoch = CASE WHEN l.owner = $3 AND l.expires_at > now() THEN l.epoch ELSE l.epoch + 1 END,
        expires_at = EXCLUDED.expires_at,
        handover_requested_by = CASE
            WHEN l.owner = $3 AND l.expires_at > now() THEN l.handover_requested_by
        END
    WHERE (l.owner = $3 AND l.expires_at > now())
        OR (EXCLUDED.owner IS NOT NULL AND (l.owner IS NULL OR l.expires_at <= now()))
    RETURNING l.partition_id, l.owner, l.epoch, l.handover_requested_by
), held AS (
    SELECT partition_id, epoch, handover_requested_by FROM written WHERE owner IS NOT NULL
)
SELECT
    state.retired,
    ARRAY(SELECT partition_id FROM held ORDER BY partition_id) AS partitions,
    ARRAY(SELECT epoch FROM held ORDER BY partition_id) AS epochs,
    ARRAY(SELECT handover_requested_by FROM held ORDER BY partition_id) AS handovers
FROM state
