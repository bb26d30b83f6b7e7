-- ?1 group_name, ?2 subscription. In purge's write transaction, after presence.sql said there
-- is a tombstone: every heartbeat of the subscription.
DELETE FROM {lease_owners} WHERE group_name = ?1 AND subscription = ?2
