-- ? requester, ? group_name, ? subscription, ? requester, ? now (ms), ? partitions (a JSON
-- array of integers). In request_handover's transaction: marks each of them held live by
-- another owner than the requester; free ones are left as they are.
UPDATE {leases} SET handover_requested_by = ?
WHERE group_name = ? AND subscription = ? AND owner IS NOT NULL AND owner <> ?
    AND expires_at_ms > ?
    AND partition_id IN (
        SELECT b.partition_id FROM JSON_TABLE(?, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
    )
