-- ? group_name, ? subscription. In retire's transaction: the tombstone (kept, with its time,
-- if there is one already).
INSERT INTO {retired} (group_name, subscription) VALUES (?, ?)
ON DUPLICATE KEY UPDATE retired_at = retired_at
