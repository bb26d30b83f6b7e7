-- ?1 group_name, ?2 subscription. In purge's write transaction, after presence.sql said there
-- is a tombstone: every lease of the subscription, so that epochs start anew.
DELETE FROM {leases} WHERE group_name = ?1 AND subscription = ?2
