-- $1 group, $2 subscription, $3 partition, $4 from, $5 to.
-- Compare-and-set in one statement. `advanced` is 1 when the row moved from $4 to $5.
-- Otherwise `current` says where the row is (NULL when there is none). FOR SHARE makes that
-- read wait for a concurrent writer and return its committed position, not the one in this
-- statement's snapshot, so a Moved error reports where the row really is.
WITH advanced AS (
    UPDATE {table}
    SET position = $5, updated_at = now()
    WHERE group_name = $1 AND subscription = $2 AND partition_id = $3 AND position = $4
    RETURNING 1
)
SELECT
    (SELECT count(*) FROM advanced) AS advanced,
    (SELECT c.position
        FROM {table} AS c
        WHERE c.group_name = $1 AND c.subscription = $2 AND c.partition_id = $3
        FOR SHARE) AS current
