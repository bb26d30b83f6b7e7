-- ?1 group_name, ?2 subscription. The first statement of every lease transaction: SQLite's
-- clock, read once, as integer milliseconds since the Unix epoch (every later statement of the
-- transaction gets it as a parameter, so one instant judges every expiry), and whether the
-- subscription is retired (a tombstone in {retired}).
SELECT
    CAST(unixepoch('subsec') * 1000 AS INTEGER),
    EXISTS (SELECT 1 FROM {retired} WHERE group_name = ?1 AND subscription = ?2)
