-- ?1 group_name, ?2 subscription, ?3 now (ms). In leases' read transaction, after
-- lease_clock.sql: the live leases, sorted by partition.
SELECT partition_id, owner, epoch, expires_at_ms, handover_requested_by FROM {leases}
WHERE group_name = ?1 AND subscription = ?2 AND owner IS NOT NULL AND expires_at_ms > ?3
ORDER BY partition_id
