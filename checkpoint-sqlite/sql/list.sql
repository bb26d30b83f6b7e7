-- ?1 group_name
SELECT subscription, partition_id, position FROM {table} WHERE group_name = ?1
