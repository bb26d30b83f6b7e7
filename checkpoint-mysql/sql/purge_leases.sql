-- ? group_name, ? subscription. In purge's transaction, after presence.sql said there is a
-- tombstone: every lease of the subscription, so that epochs start anew.
DELETE FROM {leases} WHERE group_name = ? AND subscription = ?
