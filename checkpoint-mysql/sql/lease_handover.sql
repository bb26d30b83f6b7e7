-- ? partitions (a JSON array of integers, sorted), ? requester, ? group_name, ? subscription,
-- ? requester, ? now (ms). In request_handover's transaction: marks each of them held live by
-- another owner than the requester; free ones are left as they are. Joined from the array, so
-- that each partition is one primary-key lookup and only those rows are locked, in partition
-- order (an `IN (subquery)` lets the server scan, and lock, every lease of the subscription).
UPDATE {leases} AS l
JOIN JSON_TABLE(?, '$[*]' COLUMNS (p BIGINT PATH '$')) AS b ON l.partition_id = b.p
SET l.handover_requested_by = ?
WHERE l.group_name = ? AND l.subscription = ? AND l.owner IS NOT NULL AND l.owner <> ?
    AND l.expires_at_ms > ?
