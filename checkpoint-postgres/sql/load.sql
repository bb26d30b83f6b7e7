-- $1 group, $2 subscription, $3 partition.
SELECT position
FROM {table}
WHERE group_name = $1 AND subscription = $2 AND partition_id = $3
