-- ?1 group_name, ?2 subscription: whether it has a tombstone, and whether it has checkpoints.
-- Run inside the write transaction of start_at and purge, so nothing changes before they act.
SELECT
    EXISTS (SELECT 1 FROM {retired} WHERE group_name = ?1 AND subscription = ?2),
    EXISTS (SELECT 1 FROM {table} WHERE group_name = ?1 AND subscription = ?2)
