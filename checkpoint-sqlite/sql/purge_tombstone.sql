-- ?1 group_name, ?2 subscription. In purge's write transaction, after presence.sql said there
-- is a tombstone: removes it.
DELETE FROM {retired} WHERE group_name = ?1 AND subscription = ?2
