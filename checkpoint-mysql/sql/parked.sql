-- ? group_name: its parked entries in the primary key's order, subscriptions by bytes.
SELECT CONVERT(subscription USING utf8mb4), partition_id, position, error, attempts,
    parked_at_ms, retry_requested
FROM {parked}
WHERE group_name = ?
ORDER BY subscription, partition_id, position
