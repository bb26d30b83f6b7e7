-- $1 group, $2 subscription, $3 partition, $4 position.
-- One atomic statement: the row only ever moves forward, whoever wrote last.
INSERT INTO {table} AS t (group_name, subscription, partition_id, position)
VALUES ($1, $2, $3, $4)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
    SET position = EXCLUDED.position, updated_at = now()
    WHERE t.position < EXCLUDED.position
