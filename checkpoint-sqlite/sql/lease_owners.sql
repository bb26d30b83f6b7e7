-- ?1 group_name, ?2 subscription, ?3 now (ms). In leases' read transaction, after
-- lease_clock.sql: the live owners (heartbeat not expired), sorted by id (bytes).
SELECT owner, expires_at_ms FROM {lease_owners}
WHERE group_name = ?1 AND subscription = ?2 AND expires_at_ms > ?3
ORDER BY owner
