-- ?1 group_name, ?2 subscription, ?3 owner. Two statements sent as one request, in leave's
-- write transaction: ends the owner's heartbeat, then frees every lease the owner holds live
-- at SQLite's clock (read once, in `clock`: integer milliseconds of `unixepoch('subsec')`):
-- no owner, the epoch kept, the handover request cleared, expired now. Returns the partitions
-- freed. `INDEXED BY {leases_by_owner}`: without it SQLite's planner searches the primary key
-- by (group, subscription), reading every lease of the subscription.
DELETE FROM {lease_owners} WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3;
WITH clock (now) AS MATERIALIZED (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER))
UPDATE {leases} INDEXED BY {leases_by_owner}
SET owner = NULL, expires_at_ms = (SELECT now FROM clock), handover_requested_by = NULL
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
    AND expires_at_ms > (SELECT now FROM clock)
RETURNING partition_id
