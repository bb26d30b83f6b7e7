-- $1 group: an exact match on the primary key's first column, never a prefix. Sorted by
-- subscription (by bytes: the column is COLLATE "C"), partition and position, the primary
-- key's order, so the index scan needs no sort.
SELECT subscription, partition_id, position, error, attempts, parked_at_ms, retry_requested
FROM {parked}
WHERE group_name = $1
ORDER BY subscription, partition_id, position
