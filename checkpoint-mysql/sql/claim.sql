-- ? group_name, ? subscription, ? partition_id, ? initial position, ? fingerprint.
-- Creates the checkpoint at the initial position with the fingerprint, or keeps the stored
-- one; a row that has no fingerprint yet (saved only monotonically) adopts it. MySQL has no
-- RETURNING: claim_read.sql, next on the same connection, reads the row back. A retired
-- subscription selects no row and has no row to conflict with (retire deleted them).
INSERT INTO {table} (group_name, subscription, partition_id, position, query_fingerprint)
SELECT v.g, v.s, v.p, v.pos, v.f
FROM (SELECT ? AS g, ? AS s, ? AS p, ? AS pos, ? AS f) AS v
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = v.g AND r.subscription = v.s
)
ON DUPLICATE KEY UPDATE
    query_fingerprint = COALESCE(query_fingerprint, VALUES(query_fingerprint))
