-- The checkpoint table. `{table}` is the configured, validated and quoted table name.
-- One row per (group, subscription, partition); TEXT compares with the default BINARY
-- collation, so names match byte for byte. INTEGER is a signed 64-bit integer, which holds
-- every valid position (0..=i64::MAX) and every u32 partition exactly.
CREATE TABLE IF NOT EXISTS {table} (
    group_name        TEXT    NOT NULL,
    subscription      TEXT    NOT NULL,
    partition_id      INTEGER NOT NULL,
    position          INTEGER NOT NULL,
    query_fingerprint BLOB    NULL,
    updated_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (group_name, subscription, partition_id)
) WITHOUT ROWID
