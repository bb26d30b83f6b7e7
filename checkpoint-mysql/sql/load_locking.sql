-- ? group_name, ? subscription, ? partition_id. The read after a failed compare-and-set (and
-- after claim's upsert): a locking read, so that inside a caller's transaction it returns the
-- newest committed position, not the one of the transaction's snapshot.
SELECT position FROM {table}
WHERE group_name = ? AND subscription = ? AND partition_id = ?
FOR UPDATE
