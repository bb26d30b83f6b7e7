-- ?1 group_name, ?2 subscription, ?3 owner, ?4 partitions (a JSON array of integers). One
-- statement, in autocommit: a write statement takes the database's write lock when it starts,
-- before it reads anything, as `BEGIN IMMEDIATE` would. Frees each of the partitions the
-- owner holds live at SQLite's clock (read once, in `clock`: integer milliseconds of
-- `unixepoch('subsec')`): no owner, the epoch kept, the handover request cleared, expired
-- now. Returns the partitions freed.
WITH clock (now) AS MATERIALIZED (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER))
UPDATE {leases}
SET owner = NULL, expires_at_ms = (SELECT now FROM clock), handover_requested_by = NULL
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
    AND expires_at_ms > (SELECT now FROM clock)
    AND partition_id IN (SELECT value FROM json_each(?4))
RETURNING partition_id
