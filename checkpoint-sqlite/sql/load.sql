-- ?1 group_name, ?2 subscription, ?3 partition_id
SELECT position FROM {table}
WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3
