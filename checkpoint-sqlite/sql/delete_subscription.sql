-- ?1 group_name, ?2 subscription. In retire's (and purge's) write transaction: every
-- checkpoint of the subscription.
DELETE FROM {table} WHERE group_name = ?1 AND subscription = ?2
