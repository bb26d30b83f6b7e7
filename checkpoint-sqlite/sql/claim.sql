-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 initial position, ?5 fingerprint.
-- Creates the checkpoint at ?4 with ?5, or keeps the stored one; a row that has no fingerprint
-- yet (saved only monotonically) adopts ?5. The DO UPDATE always runs so that RETURNING always
-- yields the stored row; the caller compares the returned fingerprint with ?5.
-- A retired subscription (a tombstone in {retired}) selects no row and has no row to conflict
-- with (retire deleted them): nothing is returned, which the caller reports as Retired.
INSERT INTO {table} (group_name, subscription, partition_id, position, query_fingerprint)
SELECT ?1, ?2, ?3, ?4, ?5
WHERE NOT EXISTS (SELECT 1 FROM {retired} WHERE group_name = ?1 AND subscription = ?2)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
SET query_fingerprint = COALESCE({table}.query_fingerprint, excluded.query_fingerprint)
RETURNING position, query_fingerprint
