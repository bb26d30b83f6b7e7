CREATE TABLE IF NOT EXISTS {table} (
    group_name        TEXT    NOT NULL,
    subscription      TEXT    NOT NULL,
    partition_id      INTEGER NOT NULL,
    position          INTEGER NOT NULL,
    query_fingerprint BLOB    NULL,
    updated_at        TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (group_name, subscription, partition_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {retired} (
    group_name   TEXT NOT NULL,
    subscription TEXT NOT NULL,
    retired_at   TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    PRIMARY KEY (group_name, subscription)
) WITHOUT ROWID;
