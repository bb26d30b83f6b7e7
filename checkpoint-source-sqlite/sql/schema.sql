CREATE TABLE IF NOT EXISTS {table} (
    partition   INTEGER NOT NULL,
    position    INTEGER NOT NULL,
    key         TEXT,
    payload     BLOB NOT NULL,
    -- Milliseconds since the Unix epoch, by SQLite's clock, at the append.
    appended_at INTEGER NOT NULL,
    PRIMARY KEY (partition, position)
);

CREATE TABLE IF NOT EXISTS {meta} (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
