-- $1 group, $2 subscriptions, $3 partitions, $4 positions: three arrays of one length,
-- already collapsed to one entry per key and sorted by key on the client.
-- One entry per key: ON CONFLICT may not touch one row twice in one statement.
-- Rows are inserted in the array order (ORDER BY ordinality), so every batch locks its rows
-- in the same global order and concurrent batches over the same keys cannot deadlock.
-- Entries of a retired subscription (a tombstone in {retired}) are left out, as in save.sql.
INSERT INTO {table} AS t (group_name, subscription, partition_id, position)
SELECT $1, b.subscription, b.partition_id, b.position
FROM unnest($2::text[], $3::bigint[], $4::bigint[])
    WITH ORDINALITY AS b (subscription, partition_id, position, ordinality)
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = b.subscription
)
ORDER BY b.ordinality
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
    SET position = EXCLUDED.position, updated_at = now()
    WHERE t.position < EXCLUDED.position
