-- ? group_name, ? subscription, ? owner. In leave's transaction: ends the owner's heartbeat.
DELETE FROM {lease_owners} WHERE group_name = ? AND subscription = ? AND owner = ?
