-- ?1 group_name, ?2 subscription. One statement (one snapshot), in autocommit: SQLite's clock
-- read once (in `clock`: integer milliseconds of `unixepoch('subsec')`) and, judged by it, the
-- live leases (kind 0, sorted by partition) then the live owners (kind 1, sorted by id,
-- bytes), each row with that instant.
WITH clock (now) AS MATERIALIZED (SELECT CAST(unixepoch('subsec') * 1000 AS INTEGER))
SELECT 0, partition_id, owner, epoch, expires_at_ms, handover_requested_by, clock.now
FROM {leases}, clock
WHERE group_name = ?1 AND subscription = ?2 AND owner IS NOT NULL AND expires_at_ms > clock.now
UNION ALL
SELECT 1, NULL, owner, NULL, expires_at_ms, NULL, clock.now
FROM {lease_owners}, clock
WHERE group_name = ?1 AND subscription = ?2 AND expires_at_ms > clock.now
ORDER BY 1, 2, 3
