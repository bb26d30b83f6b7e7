-- ? group_name, ? subscription. In retire's (and purge's) transaction: every checkpoint of the
-- subscription.
DELETE FROM {table} WHERE group_name = ? AND subscription = ?
