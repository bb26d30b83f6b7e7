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
)
