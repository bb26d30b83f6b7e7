-- ? group_name, ? subscription. In purge's transaction, after presence.sql said there is a
-- tombstone: removes it.
DELETE FROM {retired} WHERE group_name = ? AND subscription = ?
