-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 from, ?5 to: a compare-and-set.
-- Changes one row when the stored position is still ?4, none otherwise.
UPDATE {table}
SET position = ?5, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3 AND position = ?4
