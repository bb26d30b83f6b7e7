-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 position.
-- Inserts the checkpoint, or moves it forward only: the DO UPDATE's WHERE leaves a row whose
-- position is already at or ahead of ?4 untouched. A retired subscription (a tombstone in
-- {retired}) selects no row, so nothing is written; one writer at a time makes that check
-- and the write one atomic step.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT ?1, ?2, ?3, ?4
WHERE NOT EXISTS (SELECT 1 FROM {retired} WHERE group_name = ?1 AND subscription = ?2)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
SET position = excluded.position, updated_at = excluded.updated_at
WHERE {table}.position < excluded.position
