-- ?1 group_name: its parked entries in the primary key's order, subscriptions by bytes (the
-- default BINARY collation compares UTF-8 text byte for byte).
SELECT subscription, partition_id, position, error, attempts, parked_at_ms, retry_requested
FROM {parked}
WHERE group_name = ?1
ORDER BY subscription, partition_id, position
