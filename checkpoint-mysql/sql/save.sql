-- ? group_name, ? subscription, ? partition_id, ? position (MySQL's placeholders are
-- positional, so the derived table `v` names them once for the two places that use them).
-- Inserts the checkpoint, or moves it forward only: the update keeps the greater position
-- (updated_at first, while `position` is still the stored one). A retired subscription (a
-- tombstone in {retired}) selects no row, so nothing is written. Under REPEATABLE READ (the
-- store's sessions' level) the tombstone read of an INSERT .. SELECT is a locking read: it
-- waits for a retire that wrote the tombstone and sees it, and a retire waits for it.
INSERT INTO {table} (group_name, subscription, partition_id, position)
SELECT v.g, v.s, v.p, v.pos
FROM (SELECT ? AS g, ? AS s, ? AS p, ? AS pos) AS v
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = v.g AND r.subscription = v.s
)
ON DUPLICATE KEY UPDATE
    updated_at = IF(VALUES(position) > position, CURRENT_TIMESTAMP(6), updated_at),
    position = GREATEST(position, VALUES(position))
