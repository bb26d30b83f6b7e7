-- ?1 group_name, ?2 subscription, ?3 requester, ?4 now (ms), ?5 partitions (a JSON array of
-- integers). In request_handover's write transaction: marks each of them held live by another
-- owner than the requester; free ones are left as they are.
UPDATE {leases} SET handover_requested_by = ?3
WHERE group_name = ?1 AND subscription = ?2 AND owner IS NOT NULL AND owner <> ?3
    AND expires_at_ms > ?4 AND partition_id IN (SELECT value FROM json_each(?5))
