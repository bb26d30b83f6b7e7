-- $1 group, $2 subscription, $3 partition, $4 position.
-- One atomic statement: the row only ever moves forward, whoever wrote last; a retired
-- subscription (a tombstone in {retired}) selects no row, so nothing is written. Its
-- snapshot is taken after the statement holds its lock on {table}, so it sees the tombstone
-- of every retire that committed before (see `retire_lock.sql`).
INSERT INTO {table} AS t (group_name, subscription, partition_id, position)
SELECT $1, $2, $3, $4
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
    SET position = EXCLUDED.position, updated_at = now()
    WHERE t.position < EXCLUDED.position
