-- No parameters. The second statement of retire's transaction, before it writes anything.
-- SHARE ROW EXCLUSIVE conflicts with the ROW EXCLUSIVE lock that every INSERT and UPDATE
-- (save, save_all, claim, advance, start_at) takes on {table}, and with itself. So the
-- retire waits for every transaction that has written to the table to end, and every such
-- statement that comes later waits until the retire commits. A statement takes its table
-- locks before its snapshot (when it is bound, or parsed), and under READ COMMITTED its
-- snapshot is taken when it starts to execute: a save that waited here sees the tombstone.
-- Reads (ACCESS SHARE) are not blocked. Two retires take turns and cannot deadlock.
LOCK TABLE {table} IN SHARE ROW EXCLUSIVE MODE
