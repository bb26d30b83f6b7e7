CREATE TABLE IF NOT EXISTS {table} (
    group_name        TEXT COLLATE "C" NOT NULL,
    subscription      TEXT COLLATE "C" NOT NULL,
    partition_id      BIGINT      NOT NULL CHECK (partition_id BETWEEN 0 AND 4294967295),
    position          BIGINT      NOT NULL CHECK (position >= 0),
    query_fingerprint BYTEA       NULL CHECK (octet_length(query_fingerprint) = 32),
    updated_at        TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (group_name, subscription, partition_id)
);
CREATE TABLE IF NOT EXISTS {retired} (
    group_name   TEXT COLLATE "C" NOT NULL,
    subscription TEXT COLLATE "C" NOT NULL,
    retired_at   TIMESTAMPTZ NOT NULL DEFAULT now(),
    PRIMARY KEY (group_name, subscription)
);
CREATE TABLE IF NOT EXISTS {leases} (
    group_name            TEXT COLLATE "C" NOT NULL,
    subscription          TEXT COLLATE "C" NOT NULL,
    partition_id          BIGINT      NOT NULL CHECK (partition_id BETWEEN 0 AND 4294967295),
    owner                 TEXT COLLATE "C" NULL,
    owner_generation      BIGINT      NULL,
    epoch                 BIGINT      NOT NULL CHECK (epoch >= 1),
    handover_requested_by TEXT COLLATE "C" NULL,
    PRIMARY KEY (group_name, subscription, partition_id)
);
CREATE INDEX IF NOT EXISTS {by_owner} ON {leases} (owner, group_name, subscription);
CREATE TABLE IF NOT EXISTS {owners} (
    group_name   TEXT COLLATE "C" NOT NULL,
    subscription TEXT COLLATE "C" NOT NULL,
    owner        TEXT COLLATE "C" NOT NULL,
    generation   BIGINT      NOT NULL DEFAULT 1 CHECK (generation >= 1),
    expires_at   TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (group_name, subscription, owner)
);
CREATE TABLE IF NOT EXISTS {parked} (
    group_name      TEXT COLLATE "C" NOT NULL,
    subscription    TEXT COLLATE "C" NOT NULL,
    partition_id    BIGINT  NOT NULL CHECK (partition_id BETWEEN 0 AND 4294967295),
    position        BIGINT  NOT NULL CHECK (position >= 0),
    error           TEXT    NOT NULL,
    attempts        BIGINT  NOT NULL CHECK (attempts BETWEEN 0 AND 4294967295),
    parked_at_ms    BIGINT  NOT NULL,
    retry_requested BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY (group_name, subscription, partition_id, position)
)
