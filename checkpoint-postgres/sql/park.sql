-- $1 group, $2 subscription, $3 partition, $4 position, $5 error, $6 attempts, $7 parked_at
-- (milliseconds since the Unix epoch, by the parking process's clock). Parking an entry that
-- is parked already replaces its record in place (error, attempts, time) and clears its retry
-- request: the subscription parks it again when a requested retry failed too.
INSERT INTO {parked} AS p
    (group_name, subscription, partition_id, position, error, attempts, parked_at_ms,
     retry_requested)
VALUES ($1, $2, $3, $4, $5, $6, $7, false)
ON CONFLICT (group_name, subscription, partition_id, position) DO UPDATE
SET error = EXCLUDED.error,
    attempts = EXCLUDED.attempts,
    parked_at_ms = EXCLUDED.parked_at_ms,
    retry_requested = false
