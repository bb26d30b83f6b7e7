CREATE TABLE IF NOT EXISTS {table} (
    group_name        VARBINARY(512) NOT NULL,
    subscription      VARBINARY(512) NOT NULL,
    partition_id      BIGINT         NOT NULL,
    position          BIGINT         NOT NULL,
    query_fingerprint VARBINARY(32)  NULL,
    updated_at        TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (group_name, subscription, partition_id)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {retired} (
    group_name   VARBINARY(512) NOT NULL,
    subscription VARBINARY(512) NOT NULL,
    retired_at   TIMESTAMP(6)   NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (group_name, subscription)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {leases} (
    group_name            VARBINARY(512) NOT NULL,
    subscription          VARBINARY(512) NOT NULL,
    partition_id          BIGINT         NOT NULL,
    owner                 VARBINARY(512) NULL,
    epoch                 BIGINT         NOT NULL,
    expires_at_ms         BIGINT         NOT NULL,
    handover_requested_by VARBINARY(512) NULL,
    PRIMARY KEY (group_name, subscription, partition_id),
    INDEX {leases_by_owner} (group_name, subscription, owner)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {lease_owners} (
    group_name    VARBINARY(512) NOT NULL,
    subscription  VARBINARY(512) NOT NULL,
    owner         VARBINARY(512) NOT NULL,
    expires_at_ms BIGINT         NOT NULL,
    PRIMARY KEY (group_name, subscription, owner)
) ENGINE = InnoDB;
CREATE TABLE IF NOT EXISTS {parked} (
    group_name      VARBINARY(512) NOT NULL,
    subscription    VARBINARY(512) NOT NULL,
    partition_id    BIGINT         NOT NULL,
    position        BIGINT         NOT NULL,
    error           TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    attempts        BIGINT         NOT NULL,
    parked_at_ms    BIGINT         NOT NULL,
    retry_requested BOOLEAN        NOT NULL DEFAULT FALSE,
    PRIMARY KEY (group_name, subscription, partition_id, position)
) ENGINE = InnoDB;
