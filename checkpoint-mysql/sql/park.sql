-- ? group_name, ? subscription, ? partition_id, ? position, ? error, ? attempts,
-- ? parked_at_ms (milliseconds since the Unix epoch, by the parking process's clock).
-- Parking an entry that is parked already replaces its record in place (error, attempts,
-- time) and clears its retry request.
INSERT INTO {parked}
    (group_name, subscription, partition_id, position, error, attempts, parked_at_ms,
     retry_requested)
VALUES (?, ?, ?, ?, ?, ?, ?, FALSE)
ON DUPLICATE KEY UPDATE
    error = VALUES(error),
    attempts = VALUES(attempts),
    parked_at_ms = VALUES(parked_at_ms),
    retry_requested = FALSE
