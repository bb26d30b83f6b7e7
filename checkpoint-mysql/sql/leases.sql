-- ? group_name, ? subscription, ? now (ms). In leases' read transaction, after
-- lease_clock.sql: the live leases, sorted by partition.
SELECT partition_id, CONVERT(owner USING utf8mb4), epoch, expires_at_ms,
    CONVERT(handover_requested_by USING utf8mb4)
FROM {leases}
WHERE group_name = ? AND subscription = ? AND owner IS NOT NULL AND expires_at_ms > ?
ORDER BY partition_id
