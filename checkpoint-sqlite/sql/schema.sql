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
CREATE TABLE IF NOT EXISTS {leases} (
    group_name            TEXT    NOT NULL,
    subscription          TEXT    NOT NULL,
    partition_id          INTEGER NOT NULL,
    owner                 TEXT    NULL,
    epoch                 INTEGER NOT NULL,
    expires_at_ms         INTEGER NOT NULL,
    handover_requested_by TEXT    NULL,
    PRIMARY KEY (group_name, subscription, partition_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS {leases_by_owner} ON {leases} (group_name, subscription, owner);
CREATE TABLE IF NOT EXISTS {lease_owners} (
    group_name    TEXT    NOT NULL,
    subscription  TEXT    NOT NULL,
    owner         TEXT    NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    PRIMARY KEY (group_name, subscription, owner)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS {parked} (
    group_name      TEXT    NOT NULL,
    subscription    TEXT    NOT NULL,
    partition_id    INTEGER NOT NULL,
    position        INTEGER NOT NULL,
    error           TEXT    NOT NULL,
    attempts        INTEGER NOT NULL,
    parked_at_ms    INTEGER NOT NULL,
    retry_requested INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (group_name, subscription, partition_id, position)
) WITHOUT ROWID;
