-- ?1 group_name, ?2 the whole batch as one JSON array of [subscription, partition, position]
-- triples, at most one per (subscription, partition) (collapsed by the caller so that each row
-- is written once). json_each expands it into rows; SQLite's JSON reads every integer within the
-- signed 64-bit range as an INTEGER, so positions up to i64::MAX arrive exactly.
-- Entries of a retired subscription (a tombstone in {retired}) are left out, as in save.sql.
-- The WHERE clause is also what SQLite's grammar needs: without one, `ON CONFLICT` after
-- `INSERT ... SELECT ... FROM` would parse as a join constraint.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT ?1, entry.value ->> 0, entry.value ->> 1, entry.value ->> 2
FROM json_each(?2) AS entry
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r
    WHERE r.group_name = ?1 AND r.subscription = entry.value ->> 0
)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
SET position = excluded.position, updated_at = excluded.updated_at
WHERE {table}.position < excluded.position
