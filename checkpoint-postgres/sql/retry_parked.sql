-- $1 group, $2 subscription, $3 partition, $4 position. Marks the parked entry for a retry;
-- the client reads whether a row was updated (the entry was parked).
UPDATE {parked}
SET retry_requested = true
WHERE group_name = $1 AND subscription = $2 AND partition_id = $3 AND position = $4
