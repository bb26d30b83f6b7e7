-- ? now (ms), ? group_name, ? subscription, ? owner, ? now (ms), ? partitions (a JSON array of
-- integers). In release's and leave's transactions, after lease_owned.sql locked them: frees
-- each (no owner, the epoch kept, the handover request cleared).
UPDATE {leases} SET owner = NULL, expires_at_ms = ?, handover_requested_by = NULL
WHERE group_name = ? AND subscription = ? AND owner = ? AND expires_at_ms > ?
    AND partition_id IN (
        SELECT b.partition_id FROM JSON_TABLE(?, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
    )
