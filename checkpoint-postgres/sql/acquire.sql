-- $1 group, $2 subscription, $3 owner, $4 partitions (bigint[], sorted, each once; may be
-- empty), $5 the lease's duration in microseconds.
-- One statement, judged by the server's clock: now() (this statement's start) decides what is
-- live. Expiry lives only in the heartbeat: a lease is held by its `owner` while that owner's
-- heartbeat in {owners} has the lease's `owner_generation` and has not expired. So the
-- leases the owner holds are renewed by its heartbeat alone, and no lease row is written but
-- those granted.
-- - `heartbeat` starts or extends the owner's heartbeat to now() + $5, first (every later
--   step reads it, so this row is the first this statement locks); an expired heartbeat
--   gets the next generation, so that the leases it still names are not revived. A retired
--   subscription (a tombstone in {retired}) writes nothing, and `retired` says so.
-- - `seen`: each partition asked for as the statement's snapshot has it, with its holder's
--   heartbeat (each looked up by its whole primary key, whatever the planner's statistics).
--   It is the owner's own (its generation: kept, not written); or free (no row, no owner or
--   no generation: released, the owner's own of an older generation, or a holder whose
--   heartbeat is missing or of another generation: a generation never comes back); or
--   another owner's whose heartbeat has expired; or another owner's live one: refused, never
--   locked, so this statement does not wait for it.
-- - `doomed` (run only when there is one) locks the expired heartbeats of the holders of the
--   third kind, judged again on their newest version (same generation, expired at now()),
--   skipping any heartbeat another statement holds locked (its owner is acquiring, or
--   renewing or leaving in a statement that started before it expired, or another taker is
--   ending it) rather than waiting for it, which could deadlock: this statement holds its
--   own heartbeat, and that owner's acquire could be waiting for it in turn. `killed` ends
--   them (expires_at = -infinity; found by key, so judged on the version `doomed` locked): a
--   renew or acquire of that owner that started before this statement and locks its
--   heartbeat after it finds it expired, so it can neither report nor keep a lease given
--   away here.
-- - `contended` (in the reply) says whether a partition of the third kind was refused
--   because its holder's heartbeat was not ended here: skipped as locked, or changed since
--   the snapshot (its owner started a new generation, or another taker ended it). The lease
--   may well be free, and a new snapshot sees it as it is: the client runs this statement
--   again after a short pause (src/requests/lease.rs; the statement is idempotent: what a run
--   granted is the owner's own on the next one, which keeps its epoch), rather than refuse
--   a lease nobody holds live.
-- - `written` grants the free partitions and those of the killed holders, in partition order,
--   one upsert: a new row gets epoch 1; an existing one the next epoch, this owner and its
--   generation, and no handover request, only if its newest version is still the one judged
--   (the same epoch, which the proposed row carries + 1: 1 for a row not stored). Every grant
--   raises the epoch; what else changes a row leaves it free (a release) or does not matter
--   (a handover request, cleared); and a holder judged free stays so (its generation never
--   comes back; an expired one was ended under its lock by `killed`). A row inserted or
--   changed concurrently is locked by ON CONFLICT and judged on its newest version, so of
--   concurrent acquirers of one partition exactly one gets it.
-- Lock order, so that no two lease statements deadlock: a statement locks its own heartbeat
-- first, while it holds nothing; other heartbeats only without waiting (SKIP LOCKED); lease
-- rows in partition order. The reply is every lease the owner holds after the statement: the
-- ones of its generation (the snapshot's rows) and the ones `written` granted; and
-- `contended`.
WITH state AS (
    SELECT EXISTS (
        SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
    ) AS retired
), heartbeat AS (
    INSERT INTO {owners} AS o (group_name, subscription, owner, generation, expires_at)
    SELECT $1, $2, $3, 1, now() + $5::bigint * interval '1 microsecond'
    FROM state WHERE NOT state.retired
    ON CONFLICT (group_name, subscription, owner) DO UPDATE SET
        generation = CASE WHEN o.expires_at > now() THEN o.generation ELSE o.generation + 1 END,
        expires_at = EXCLUDED.expires_at
    RETURNING o.generation
), seen AS (
    SELECT
        p.partition_id,
        l.epoch,
        l.owner,
        l.owner_generation,
        CASE
            WHEN l.owner = $3 AND l.owner_generation = hb.generation THEN 'own'
            WHEN l.owner IS NULL OR l.owner = $3 OR l.owner_generation IS NULL THEN 'free'
            ELSE coalesce((
                SELECT CASE
                    WHEN h.generation <> l.owner_generation THEN 'free'
                    WHEN h.expires_at <= now() THEN 'expired'
                    ELSE 'live'
                END
                FROM {owners} AS h
                WHERE h.group_name = $1 AND h.subscription = $2 AND h.owner = l.owner
            ), 'free')
        END AS kind
    FROM heartbeat AS hb
    -- The array through a scalar subquery: the planner then estimates its length alike in
    -- every plan, so that after a few executions the prepared statement keeps its generic
    -- plan instead of planning again each time (most of the cost of a small acquire).
    CROSS JOIN unnest((SELECT $4::bigint[])) AS p (partition_id)
    LEFT JOIN LATERAL (
        SELECT l.epoch, l.owner, l.owner_generation
        FROM {leases} AS l
        WHERE l.group_name = $1 AND l.subscription = $2 AND l.partition_id = p.partition_id
        OFFSET 0
    ) AS l ON true
), doomed AS (
    SELECT h.owner
    FROM {owners} AS h
    WHERE EXISTS (SELECT 1 FROM seen AS s WHERE s.kind = 'expired')
        AND h.group_name = $1 AND h.subscription = $2 AND h.expires_at <= now()
        AND (h.owner, h.generation) IN (
            SELECT s.owner, s.owner_generation FROM seen AS s WHERE s.kind = 'expired'
        )
    FOR NO KEY UPDATE OF h SKIP LOCKED
), killed AS (
    UPDATE {owners} AS h SET expires_at = '-infinity'
    FROM doomed AS d
    WHERE EXISTS (SELECT 1 FROM doomed)
        AND h.group_name = $1 AND h.subscription = $2 AND h.owner = d.owner
    RETURNING h.owner
), written AS (
    INSERT INTO {leases} AS l (
        group_name, subscription, partition_id, owner, owner_generation, epoch
    )
    SELECT $1, $2, s.partition_id, $3, hb.generation, coalesce(s.epoch, 0) + 1
    FROM seen AS s, heartbeat AS hb
    WHERE s.kind = 'free' OR (s.kind = 'expired' AND s.owner IN (SELECT owner FROM killed))
    ORDER BY s.partition_id
    ON CONFLICT (group_name, subscription, partition_id) DO UPDATE SET
        owner = EXCLUDED.owner,
        owner_generation = EXCLUDED.owner_generation,
        epoch = l.epoch + 1,
        handover_requested_by = NULL
    WHERE l.epoch + 1 = EXCLUDED.epoch
    RETURNING l.partition_id, l.epoch, l.handover_requested_by
), held AS (
    SELECT l.partition_id, l.epoch, l.handover_requested_by
    FROM {leases} AS l, heartbeat AS hb
    WHERE l.group_name = $1 AND l.subscription = $2 AND l.owner = $3
        AND l.owner_generation = hb.generation
    UNION ALL
    SELECT partition_id, epoch, handover_requested_by FROM written
)
SELECT
    state.retired,
    EXISTS (
        SELECT 1 FROM seen AS s
        WHERE s.kind = 'expired' AND s.owner NOT IN (SELECT owner FROM killed)
    ) AS contended,
    ARRAY(SELECT partition_id FROM held ORDER BY partition_id) AS partitions,
    ARRAY(SELECT epoch FROM held ORDER BY partition_id) AS epochs,
    ARRAY(SELECT handover_requested_by FROM held ORDER BY partition_id) AS handovers
FROM state
