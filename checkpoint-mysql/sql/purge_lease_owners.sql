-- ? group_name, ? subscription. In purge's transaction, after presence.sql said there is a
-- tombstone: every heartbeat of the subscription.
DELETE FROM {lease_owners} WHERE group_name = ? AND subscription = ?
