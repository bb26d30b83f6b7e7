-- $1 group, $2 subscription. The third statement of retire's transaction, under its lock
-- (retire_lock.sql): the tombstone (kept if there is one), and every checkpoint of the
-- subscription deleted.
WITH tombstone AS (
    INSERT INTO {retired} (group_name, subscription)
    VALUES ($1, $2)
    ON CONFLICT (group_name, subscription) DO NOTHING
)
DELETE FROM {table}
WHERE group_name = $1 AND subscription = $2
