-- ? group_name, ? subscription, ? partition_id. A plain read: the newest committed row.
SELECT position FROM {table}
WHERE group_name = ? AND subscription = ? AND partition_id = ?
