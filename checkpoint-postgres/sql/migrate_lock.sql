-- $1 the table name as configured. Every process migrating the same table takes this lock
-- first (the first key is a constant of this crate, the second a hash of the table name), so
-- their CREATE ... IF NOT EXISTS never race on the catalog's unique indexes. The lock is
-- released when the migration's transaction ends.
SELECT pg_advisory_xact_lock(1667461481, hashtext($1))
