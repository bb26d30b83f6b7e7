-- ? group_name, ? subscription, ? partition_id, ? position. Marks the parked entry for a
-- retry; the client reads whether a row matched (the entry was parked). The store's
-- connections report matched rows, not only changed ones (CLIENT_FOUND_ROWS), so marking an
-- entry marked already still counts.
UPDATE {parked} SET retry_requested = TRUE
WHERE group_name = ? AND subscription = ? AND partition_id = ? AND position = ?
