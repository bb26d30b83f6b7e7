-- ? expires_at_ms, ? group_name, ? subscription, ? owner, ? now (ms). In acquire's and renew's
-- transactions: every lease the owner holds live now expires at the new time; an expired one
-- is not revived. lease_held.sql reads them back.
UPDATE {leases} SET expires_at_ms = ?
WHERE group_name = ? AND subscription = ? AND owner = ? AND expires_at_ms > ?
