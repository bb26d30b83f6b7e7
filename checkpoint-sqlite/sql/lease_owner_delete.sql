-- ?1 group_name, ?2 subscription, ?3 owner. In leave's write transaction: ends the owner's
-- heartbeat.
DELETE FROM {lease_owners} WHERE group_name = ?1 AND subscription = ?2 AND owner = ?3
