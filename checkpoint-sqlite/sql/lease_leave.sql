-- ?1 group_name, ?2 subscription, ?3 owner, ?4 now (ms). In leave's write transaction: frees
-- every lease the owner holds live (no owner, the epoch kept, the handover request cleared).
-- Returns the partitions freed.
UPDATE {leases} SET owner = NULL, expires_at_ms = ?4, handover_requested_by = NULL
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3 AND expires_at_ms > ?4
RETURNING partition_id
