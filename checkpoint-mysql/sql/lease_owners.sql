-- ? group_name, ? subscription, ? now (ms). In leases' read transaction, after
-- lease_clock.sql: the live owners (heartbeat not expired), sorted by id (bytes).
SELECT CONVERT(owner USING utf8mb4), expires_at_ms FROM {lease_owners}
WHERE group_name = ? AND subscription = ? AND expires_at_ms > ?
ORDER BY owner
