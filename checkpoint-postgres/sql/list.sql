-- $1 group: an exact match on the primary key's first column, never a prefix.
SELECT subscription, partition_id, position
FROM {table}
WHERE group_name = $1
