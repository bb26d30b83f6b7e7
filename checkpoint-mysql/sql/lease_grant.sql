-- ? group_name, ? subscription, ? owner, ? expires_at_ms, ? partitions (a JSON array of
-- integers), then ? now (ms) three times. In acquire's transaction, after lease_extend.sql:
-- grants each partition that has no lease yet (epoch 1) or whose lease is free or expired
-- (epoch + 1, the handover request cleared). A lease held live, by this owner (already
-- extended) or by another (refused), is left as it is. The assignments run left to right:
-- those before `owner` judge the stored lease; `expires_at_ms`, last, follows the new owner.
-- Rows are written in partition order, the order every lease statement locks them in.
INSERT INTO {leases} (group_name, subscription, partition_id, owner, epoch, expires_at_ms)
SELECT v.g, v.s, b.partition_id, v.o, 1, v.e
FROM (SELECT ? AS g, ? AS s, ? AS o, ? AS e) AS v
JOIN JSON_TABLE(?, '$[*]' COLUMNS (partition_id BIGINT PATH '$')) AS b
ORDER BY b.partition_id
ON DUPLICATE KEY UPDATE
    epoch = IF(owner IS NULL OR expires_at_ms <= ?, epoch + 1, epoch),
    handover_requested_by = IF(owner IS NULL OR expires_at_ms <= ?, NULL, handover_requested_by),
    owner = IF(owner IS NULL OR expires_at_ms <= ?, VALUES(owner), owner),
    expires_at_ms = IF(owner = VALUES(owner), VALUES(expires_at_ms), expires_at_ms)
