-- ? partitions (a JSON array of integers, sorted), ? now (ms), ? group_name, ? subscription,
-- ? owner, ? now (ms). In release's and leave's transactions, after lease_owned.sql locked
-- them: frees each (no owner, the epoch kept, the handover request cleared). Joined from the
-- array: one primary-key lookup per partition, only those rows touched.
UPDATE {leases} AS l
JOIN JSON_TABLE(?, '$[*]' COLUMNS (p BIGINT PATH '$')) AS b ON l.partition_id = b.p
SET l.owner = NULL, l.expires_at_ms = ?, l.handover_requested_by = NULL
WHERE l.group_name = ? AND l.subscription = ? AND l.owner = ? AND l.expires_at_ms > ?
