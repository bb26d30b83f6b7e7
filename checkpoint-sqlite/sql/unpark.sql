-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 position. Removes the parked entry; the
-- client reads whether a row was deleted (the entry was parked).
DELETE FROM {parked}
WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3 AND position = ?4
