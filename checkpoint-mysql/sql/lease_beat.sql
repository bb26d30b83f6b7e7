-- ? expires_at_ms, ? group_name, ? subscription, ? owner, ? now (ms). In renew's transaction:
-- extends the owner's heartbeat only if it is live; no row matched means the owner's
-- heartbeat expired or never existed (NotHeld). The store's connections count matched rows
-- (CLIENT_FOUND_ROWS), so a beat that sets the same expiry still counts.
UPDATE {lease_owners} SET expires_at_ms = ?
WHERE group_name = ? AND subscription = ? AND owner = ? AND expires_at_ms > ?
