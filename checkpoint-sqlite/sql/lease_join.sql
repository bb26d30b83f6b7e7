-- ?1 group_name, ?2 subscription, ?3 owner, ?4 expires_at_ms. In acquire's write transaction:
-- starts or extends the owner's heartbeat.
INSERT INTO {lease_owners} (group_name, subscription, owner, expires_at_ms)
VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (group_name, subscription, owner) DO UPDATE
SET expires_at_ms = excluded.expires_at_ms
