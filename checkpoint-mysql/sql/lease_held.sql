-- ? group_name, ? subscription, ? owner, ? now (ms). Last in acquire's and renew's
-- transactions: the leases the owner holds live (those just extended or granted), by
-- partition.
SELECT partition_id, epoch, CONVERT(handover_requested_by USING utf8mb4) FROM {leases}
WHERE group_name = ? AND subscription = ? AND owner = ? AND expires_at_ms > ?
ORDER BY partition_id
