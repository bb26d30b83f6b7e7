-- ? group_name, ? subscription, ? owner, ? now (ms). Last in acquire's and renew's
-- transactions: the leases the owner holds live (those just extended or granted), by
-- partition. A locking read: it reads the rows as they are now, as the updates before it did.
-- A plain read would read the snapshot of the transaction's first statement, where a lease
-- another owner was granted since (after it expired) still shows this owner.
SELECT partition_id, epoch, CONVERT(handover_requested_by USING utf8mb4) FROM {leases}
WHERE group_name = ? AND subscription = ? AND owner = ? AND expires_at_ms > ?
ORDER BY partition_id
FOR UPDATE
