-- $1 group, $2 subscription, $3 partitions, $4 positions: two arrays of one length, each
-- partition once (validated on the client).
-- Creates every checkpoint only when the subscription has neither a checkpoint nor a
-- tombstone; `retired` and `live` say why nothing was created. A plain INSERT, without
-- ON CONFLICT: a checkpoint that a concurrent save creates after this statement's snapshot
-- makes it fail with unique_violation (23505), which rolls the whole statement back (nothing
-- created, nothing moved) and which the client reports as Exists. Rows are inserted in
-- partition order, the order save_all locks them in, so concurrent writers cannot deadlock.
-- Sent in a transaction after start_at_lock.sql, so a concurrent start_at of the same name has
-- committed (and its rows are in this statement's snapshot) or has not begun its insert.
WITH present AS (
    SELECT
        EXISTS (
            SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
        ) AS retired,
        EXISTS (
            SELECT 1 FROM {table} AS c WHERE c.group_name = $1 AND c.subscription = $2
        ) AS live
), created AS (
    INSERT INTO {table} (group_name, subscription, partition_id, position)
    SELECT $1, $2, b.partition_id, b.position
    FROM unnest($3::bigint[], $4::bigint[]) AS b (partition_id, position), present
    WHERE NOT present.retired AND NOT present.live
    ORDER BY b.partition_id
    RETURNING 1
)
SELECT present.retired, present.live, (SELECT count(*) FROM created) AS created
FROM present
