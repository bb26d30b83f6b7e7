-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 position. Marks the parked entry for a
-- retry; the client reads whether a row changed (the entry was parked).
UPDATE {parked} SET retry_requested = 1
WHERE group_name = ?1 AND subscription = ?2 AND partition_id = ?3 AND position = ?4
