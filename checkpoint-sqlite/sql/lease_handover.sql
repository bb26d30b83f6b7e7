-- ?1 group_name, ?2 subscription, ?3 requester, ?4 partitions (a JSON array of integers). One
-- statement, in autocommit (it takes the write lock when it starts, as `BEGIN IMMEDIATE`
-- would): marks each of them held live at SQLite's clock (read once, in `clock`) by another
-- owner than the requester; free ones are left as they are.
WITH clock (now) AS MATERIALIZED (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER))
UPDATE {leases} SET handover_requested_by = ?3
WHERE group_name = ?1 AND subscription = ?2 AND owner IS NOT NULL AND owner <> ?3
    AND expires_at_ms > (SELECT now FROM clock)
    AND partition_id IN (SELECT value FROM json_each(?4))
