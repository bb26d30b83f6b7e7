-- ? group_name, ? subscription, ? partition_id, ? position. Removes the parked entry; the
-- client reads whether a row was deleted (the entry was parked).
DELETE FROM {parked}
WHERE group_name = ? AND subscription = ? AND partition_id = ? AND position = ?
