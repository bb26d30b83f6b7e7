-- ? group_name, ? subscription, ? partition_id. After claim.sql: the row's position and
-- fingerprint, by a locking read (the newest committed row, also inside a caller's
-- transaction); no row when the subscription is retired.
SELECT position, query_fingerprint FROM {table}
WHERE group_name = ? AND subscription = ? AND partition_id = ?
FOR UPDATE
