-- ?1 group_name, ?2 subscription, ?3 owner, ?4 now (ms), ?5 expires_at_ms. In renew's write
-- transaction: extends the owner's heartbeat only if it is live; no row changed means the
-- owner's heartbeat expired or never existed (NotHeld).
UPDATE {lease_owners} SET expires_at_ms = ?5
WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3 AND expires_at_ms > ?4
