-- $1 {leases}, $2 {owners}, $3 the index {by_owner}, each quoted and qualified as the other
-- statements name them. `current`: the lease tables have the current layout (the generations
-- and the index). `first`: {leases} is of the first layout (no `owner_generation` yet), which
-- `sql/upgrade_leases.sql` upgrades. Reads the catalog only: any role may run it.
SELECT
    to_regclass($3) IS NOT NULL
        AND EXISTS (
            SELECT 1 FROM pg_attribute
            WHERE attrelid = to_regclass($2) AND attname = 'generation' AND NOT attisdropped
        )
        AND EXISTS (
            SELECT 1 FROM pg_attribute
            WHERE attrelid = to_regclass($1) AND attname = 'owner_generation'
                AND NOT attisdropped
        )
        AND NOT EXISTS (
            SELECT 1 FROM pg_attribute
            WHERE attrelid = to_regclass($1) AND attname = 'expires_at' AND NOT attisdropped
                AND attnotnull
        ) AS current,
    to_regclass($1) IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM pg_attribute
        WHERE attrelid = to_regclass($1) AND attname = 'owner_generation' AND NOT attisdropped
    ) AS first
