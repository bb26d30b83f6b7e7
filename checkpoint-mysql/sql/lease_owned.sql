-- ? group_name, ? subscription, ? owner, ? now (ms), ? partitions (a JSON array of integers,
-- or NULL for all), ? the same array again (`[]` for all). In release's and leave's
-- transactions: which of them the owner holds live, locked (FOR UPDATE) so that
-- lease_free.sql frees exactly these.
SELECT l.partition_id FROM {leases} AS l
WHERE l.group_name = ? AND l.subscription = ? AND l.owner = ? AND l.expires_at_ms > ?
    AND (? IS NULL OR l.partition_id IN (
        SELECT b.partition_id FROM JSON_TABLE(?, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
    ))
ORDER BY l.partition_id
FOR UPDATE
