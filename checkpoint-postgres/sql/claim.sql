-- $1 group, $2 subscription, $3 partition, $4 initial position, $5 fingerprint (32 bytes).
-- Creates the row at the initial position on first use; afterwards the stored position wins.
-- A row without a fingerprint (only ever saved monotonically) adopts this one; a row with a
-- fingerprint keeps it, and the client compares it with the requested one. The update also
-- locks the row, so concurrent claims are serialised.
-- A retired subscription (a tombstone in {retired}) selects no row and has no row to
-- conflict with (retire deleted them): the statement returns nothing, which the client
-- reports as Retired.
INSERT INTO {table} AS t (group_name, subscription, partition_id, position, query_fingerprint)
SELECT $1, $2, $3, $4, $5
WHERE NOT EXISTS (
    SELECT 1 FROM {retired} AS r WHERE r.group_name = $1 AND r.subscription = $2
)
ON CONFLICT (group_name, subscription, partition_id) DO UPDATE
    SET query_fingerprint = COALESCE(t.query_fingerprint, EXCLUDED.query_fingerprint)
RETURNING t.position, t.query_fingerprint
