-- $1 group, $2 subscription. Removes the tombstone and, when there was one, whatever the
-- subscription still has in {table} (retire left nothing; this is for rows written by hand),
-- and its leases and heartbeats ({leases}, {owners}: retire leaves them, purge starts the
-- name anew, epochs included).
-- `retired` says whether there was a tombstone, `live` whether the subscription has
-- checkpoints (read in the statement's snapshot, before its own delete): without a
-- tombstone, a live subscription is refused (NotRetired) and nothing was deleted.
WITH tombstone AS (
    DELETE FROM {retired}
    WHERE group_name = $1 AND subscription = $2
    RETURNING 1
), leftovers AS (
    DELETE FROM {table}
    WHERE group_name = $1 AND subscription = $2 AND EXISTS (SELECT 1 FROM tombstone)
), leases AS (
    DELETE FROM {leases}
    WHERE group_name = $1 AND subscription = $2 AND EXISTS (SELECT 1 FROM tombstone)
), heartbeats AS (
    DELETE FROM {owners}
    WHERE group_name = $1 AND subscription = $2 AND EXISTS (SELECT 1 FROM tombstone)
)
SELECT
    EXISTS (SELECT 1 FROM tombstone) AS retired,
    EXISTS (
        SELECT 1 FROM {table} AS c WHERE c.group_name = $1 AND c.subscription = $2
    ) AS live
