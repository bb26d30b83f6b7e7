-- ? group_name, ? subscription, ? owner, ? expires_at_ms. In acquire's transaction: starts or
-- extends the owner's heartbeat.
INSERT INTO {lease_owners} (group_name, subscription, owner, expires_at_ms)
VALUES (?, ?, ?, ?)
ON DUPLICATE KEY UPDATE expires_at_ms = VALUES(expires_at_ms)
