-- ?1 group_name, ?2 subscription. In retire's write transaction: the tombstone (kept if
-- there is one already).
INSERT INTO {retired} (group_name, subscription) VALUES (?1, ?2)
ON CONFLICT (group_name, subscription) DO NOTHING
