-- ? group_name, ? subscription. The first statement of start_at's and purge's transactions:
-- whether the subscription has a tombstone, and whether it has checkpoints, by locking reads
-- (the newest committed rows; the gaps they find empty stay locked until the transaction
-- ends, so no save, start_at or retire of the name can change the answer before it writes).
SELECT
    EXISTS (
        SELECT 1 FROM {retired} AS r
        WHERE r.group_name = v.g AND r.subscription = v.s FOR UPDATE
    ),
    EXISTS (
        SELECT 1 FROM {table} AS c
        WHERE c.group_name = v.g AND c.subscription = v.s FOR UPDATE
    )
FROM (SELECT ? AS g, ? AS s) AS v
