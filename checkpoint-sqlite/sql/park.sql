-- ?1 group_name, ?2 subscription, ?3 partition_id, ?4 position, ?5 error, ?6 attempts,
-- ?7 parked_at_ms (milliseconds since the Unix epoch, by the parking process's clock).
-- Parking an entry that is parked already replaces its record in place (error, attempts,
-- time) and clears its retry request.
INSERT INTO {parked}
    (group_name, subscription, partition_id, position, error, attempts, parked_at_ms,
     retry_requested)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0)
ON CONFLICT (group_name, subscription, partition_id, position) DO UPDATE
SET error = excluded.error,
    attempts = excluded.attempts,
    parked_at_ms = excluded.parked_at_ms,
    retry_requested = 0
