-- Brings lease tables of the first layout (an expiry per lease: `expires_at` NOT NULL in
-- {leases}, no generations) to the current one, in the migration's transaction, under its
-- lock; run only when {leases} has no `owner_generation` yet. Every heartbeat keeps its expiry
-- and gets generation 1; a lease live under the first layout (an owner, `expires_at` in the
-- future: its owner's heartbeat expires at that same instant) gets its owner's generation 1,
-- so it stays held exactly as long as it was; any other lease is left with no generation,
-- which no heartbeat has: free. `expires_at` stays in {leases}, nullable and no longer read
-- (dropping it would break a process of the first layout still running).
ALTER TABLE {owners} ADD COLUMN IF NOT EXISTS
    generation BIGINT NOT NULL DEFAULT 1 CHECK (generation >= 1);
ALTER TABLE {leases} ADD COLUMN IF NOT EXISTS owner_generation BIGINT NULL;
UPDATE {leases} SET owner_generation = 1 WHERE owner IS NOT NULL AND expires_at > now();
ALTER TABLE {leases} ALTER COLUMN expires_at DROP NOT NULL;
CREATE INDEX IF NOT EXISTS {by_owner} ON {leases} (owner, group_name, subscription)
