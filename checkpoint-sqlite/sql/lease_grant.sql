-- ?1 group_name, ?2 subscription, ?3 owner, ?4 now (ms), ?5 expires_at_ms, ?6 partitions (a
-- JSON array of integers). In acquire's write transaction, after lease_extend.sql: grants each
-- partition that has no lease yet (epoch 1) or whose lease is free or expired (epoch + 1), and
-- clears any handover request. A lease held live, by this owner (already extended) or by
-- another (refused), is left untouched and not returned. Returns the grants.
INSERT INTO {leases} (group_name, subscription, partition_id, owner, epoch, expires_at_ms)
SELECT ?1, ?2, requested.value, ?3, 1, ?5 FROM json_each(?6) AS requested WHERE true
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
SET owner = excluded.owner,
    epoch = {leases}.epoch + 1,
    expires_at_ms = excluded.expires_at_ms,
    handover_requested_by = NULL
WHERE {leases}.owner IS NULL OR {leases}.expires_at_ms <= ?4
RETURNING partition_id, epoch, handover_requested_by
